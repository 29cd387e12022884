"""What `run`, `diff` and a baseline say in words, when a measurement is missing or a side has nothing: every
sentence ends, names what changed, and never prints None."""

from __future__ import annotations

import io
import sys
from pathlib import Path

from rich.console import Console

from gputriage import api
from gputriage.diagnosis.run.baseline import baseline, diff, regression
from gputriage.model.run import RunReport, Throughput
from gputriage.report.diff_terminal import render_diff
from gputriage.report.run_terminal import render


def _run(steps_per_s: float, command: list[str], run_id: int) -> RunReport:
    return RunReport(
        id=run_id,
        command=command,
        started_s=1000.0,
        ended_s=1060.0,
        throughput=Throughput(steps_per_s=steps_per_s, steady_s=50.0),
    )


def text_of(draw) -> str:
    buf = io.StringIO()
    draw(Console(file=buf, width=200, color_system=None))
    return buf.getvalue()


def test_a_regression_names_a_changed_command_and_calls_its_baseline_once():
    nightly = baseline("nightly", [_run(10.0 + k / 10, ["python", "train.py"], k) for k in range(3)], 0.0)
    slower = baseline("this run", [_run(7.0, ["python", "train.py", "--fast"], 9)], 0.0)
    d = diff(nightly, slower, "baseline nightly", "this run")
    f = regression(d)
    assert f is not None and f.symptom.startswith("Below baseline nightly: steps_per_s -30.")
    assert "baseline baseline" not in f.symptom
    assert "command: python train.py -> python train.py --fast" in f.cause and "the same" not in f.cause
    same = diff(nightly, baseline("this run", [_run(7.0, ["python", "train.py"], 9)], 0.0), "run 3", "this run")
    f = regression(same)
    assert f is not None and f.symptom.startswith("Below run 3:") and "Nothing recorded in the environment" in f.cause


def test_diff_of_runs_without_a_verdict_says_none_not_None():
    a = baseline("a", [_run(10.0, ["python", "x.py"], 1)], 0.0)
    b = baseline("b", [_run(10.0, ["python", "x.py"], 2)], 0.0)
    shown = text_of(lambda c: render_diff(diff(a, b, "run 1", "run 2"), c))
    assert "verdict: none on either side" in shown and "None" not in shown


def test_a_run_without_a_gpu_finishes_its_sentences(tmp_path, monkeypatch):
    """No GPU here: the note says what was sampled; one printed rate is 'median of 1 line' with no '0 s' span; a
    price gives no cost and says why."""
    monkeypatch.setenv("GPUTRIAGE_CONFIG", str(tmp_path / "none.toml"))
    store = tmp_path / "runs.sqlite"
    report = api.run(
        [sys.executable, "-c", "print('tokens/s: 5')"],
        store=store,
        metric=r"tokens/s: (\S+)",
        price_per_gpu_hour=2.5,
        currency="EUR",
        stdout_to_stderr=True,
    )
    assert not report.verdict.per_gpu and report.cost is None
    shown = text_of(lambda c: render(report, c))
    assert "only the host and the workload were sampled" in shown
    assert "no cost at 2.5 EUR/GPU-hour: no GPU was sampled" in shown
    assert "median of 1 line matching" in shown and "1 lines" not in shown and "steady 0 s" not in shown
    # what it could judge, from what it holds, and what it could not
    assert "no GPU verdict: judged the workload's throughput" in " ".join(shown.split())
    assert "not judged: whether a GPU is used" in " ".join(shown.split()) and "`gputriage check`" in shown
    assert "the sampler decided on its own" not in shown and "steady state" not in shown.split("python:")[0]
    assert "None" not in shown
    again = api.show(report.id, store, price_per_gpu_hour=4.0)  # `show --price`: the same reason, at that price
    assert again.cost is None and any(n.startswith("no cost at 4 USD/GPU-hour") for n in again.notes)


def test_the_first_job_of_the_readme_runs_here_and_says_what_it_judged(tmp_path, monkeypatch):
    """`gputriage run -- python3 examples/first_run.py`, the README's first command, on this machine: it ends, reports
    its samples through gputriage.step(), and either gives its GPU's verdict or says what it judged without one."""
    monkeypatch.setenv("GPUTRIAGE_CONFIG", str(tmp_path / "none.toml"))
    example = Path(__file__).parent.parent / "examples" / "first_run.py"
    report = api.run(
        [sys.executable, str(example), "--seconds", "3"], store=tmp_path / "runs.sqlite", stdout_to_stderr=True
    )
    assert report.exit_code == 0 and report.throughput is not None and report.throughput.samples > 0
    shown = " ".join(text_of(lambda c: render(report, c)).split())
    if report.verdict.per_gpu:  # a GPU here: its verdict
        assert any(v.bottleneck is not None for v in report.verdict.per_gpu.values())
    else:
        assert "no GPU verdict: judged the workload's throughput" in shown and "not judged: whether a GPU" in shown
        assert "not profiled: no GPU to profile" in shown
