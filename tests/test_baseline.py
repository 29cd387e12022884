"""Baselines and diffs: a workload's figures kept over several runs (median and spread), a later run
compared with them — a change called only outside the measured noise, the environment beside it, and
`run --baseline` as a CI gate.

The runs compared are judged from a workload's progress on a driven clock (`recordings.paced`) and kept in a store as
`gputriage run --store` keeps them: how fast a real loop runs depends on how much CPU it gets. One real run checks
the gate, with a loop that reports far less than its baseline however loaded the machine is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gputriage.api.baseline import against
from recordings import keep, paced

GT = [sys.executable, "-m", "gputriage"]
FAST, SLOW = ["python", "loop.py", "0.02"], ["python", "loop.py", "0.05"]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(GT + list(args), capture_output=True, text=True, timeout=300)


def saved_fast(store: Path) -> dict:
    """Three runs of the loop at 392, 400 and 410 samples/s kept as baseline `fast`."""
    ids = [str(keep(store, paced(rate), FAST).id) for rate in (392.0, 400.0, 410.0)]
    saved = cli("baseline", "save", "fast", *ids, "--store", str(store), "--json")
    assert saved.returncode == 0, saved.stderr
    return json.loads(saved.stdout)


def test_a_slower_run_falls_below_its_baseline(tmp_path):
    store = tmp_path / "runs.sqlite"
    fig = saved_fast(store)["figures"]["samples_per_s"]
    assert fig == {"median": 400.0, "low": 392.0, "high": 410.0, "runs": 3}
    # `run --baseline fast`: the run at 160 samples/s, compared as it ends
    slow = keep(store, paced(160.0), SLOW, then=lambda r: against(r, "fast", store))
    report = json.loads(cli("show", str(slow.id), "--store", str(store), "--json").stdout)
    f = next(f for f in report["findings"] if f["id"] == "run.regression")
    assert f["severity"] == "warn" and f["evidence"]["regressions"]["samples_per_s"] == -60.0
    assert report["baseline"]["environment"][0]["key"] == "command"  # the loop's argument changed

    store_args = ["--store", str(store)]
    d = cli("diff", "fast", str(slow.id), *store_args, "--json", "--fail-on-regression")
    assert d.returncode == 1
    change = next(c for c in json.loads(d.stdout)["changes"] if c["figure"] == "samples_per_s")
    assert change["called"] is True and change["better"] is False and change["noise_pct"] == 2.2
    page = tmp_path / "diff.html"
    text = cli("diff", "fast", str(slow.id), *store_args, "--html", str(page)).stdout
    assert "worse" in text and "environment changed" in text
    assert '<b class="worse">worse</b>' in page.read_text()  # the same diff, as a page
    run_page = tmp_path / "run.html"
    r = cli("report", str(slow.id), *store_args, "-o", str(run_page))
    assert r.returncode == 0, r.stderr
    assert "Against the baseline (baseline fast)" in run_page.read_text()  # the stored run, its baseline with it


LOOP = "import time, gputriage\nfor _ in range(25):\n    time.sleep(0.1)\n    gputriage.step(samples=8)\n"


def test_run_baseline_fails_the_gate_of_a_run_below_it(tmp_path):
    """A real `run --baseline fast --fail-on warn`: the loop reports 8 samples a step, a step at most every 0.1 s
    (80 samples/s, less on a loaded machine), against a baseline of 400."""
    store = tmp_path / "runs.sqlite"
    saved_fast(store)
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    r = cli(
        "run",
        "--store",
        str(store),
        "--json",
        "--baseline",
        "fast",
        "--fail-on",
        "warn",
        "--",
        sys.executable,
        str(script),
    )
    assert r.returncode == 1, r.stderr[-2000:]  # the gate: a warning at --fail-on warn
    report = json.loads(r.stdout)
    f = next(f for f in report["findings"] if f["id"] == "run.regression")
    assert f["evidence"]["regressions"]["samples_per_s"] < -75
    assert "command" in [e["key"] for e in report["baseline"]["environment"]]


def test_a_change_inside_the_noise_is_not_called():
    from gputriage.diagnosis.run.baseline import diff, regression
    from gputriage.model.baseline import Baseline, Figure

    base = Baseline(name="nightly", figures={"samples_per_s": Figure(median=400, low=360, high=430, runs=5)})
    same = Baseline(name="this run", figures={"samples_per_s": Figure(median=385, low=385, high=385, runs=1)})
    slower = Baseline(name="this run", figures={"samples_per_s": Figure(median=300, low=300, high=300, runs=1)})
    d = diff(base, same, "baseline nightly", "this run")
    assert d.changes[0].noise_pct == 8.8 and d.changes[0].called is False and regression(d) is None
    d = diff(base, slower, "baseline nightly", "this run")
    assert d.changes[0].called is True and d.regressions == ["samples_per_s"]
    assert regression(d).symptom == "Below baseline nightly: samples_per_s -25.0% (noise 8.8%)"


def test_two_single_runs_have_no_known_noise_and_nothing_is_called(tmp_path):
    store = tmp_path / "runs.sqlite"
    a, b = (keep(store, paced(rate), command).id for rate, command in ((400.0, FAST), (160.0, SLOW)))
    d = cli("diff", str(a), str(b), "--store", str(store), "--json")
    change = next(c for c in json.loads(d.stdout)["changes"] if c["figure"] == "samples_per_s")
    assert change["change_pct"] == -60.0 and "called" not in change


@pytest.mark.parametrize(
    "args, message",
    [
        (["baseline", "save", "7", "1"], "must not be a number"),
        (["diff", "nightly", "1"], "no baseline or run 'nightly'"),
        (["baseline", "save", "x", "99"], "no run 99"),
    ],
)
def test_bad_names_and_runs_are_clear_errors(tmp_path, args, message):
    keep(tmp_path / "runs.sqlite", paced(400.0), FAST)  # run 1
    r = cli(*args, "--store", str(tmp_path / "runs.sqlite"))
    assert r.returncode == 3 and message in r.stderr and "Traceback" not in r.stderr


def test_a_real_h200_baseline_and_a_changed_run(tmp_path):
    """Recorded on an H200: three runs of the GPT loop kept as baseline `gpt`, then the loop with its DataLoader
    workers at 0. Tokens/s moved +3.3% against a noise of 2.7%: called better; DRAM activity moved 0.2% with
    three runs agreeing to 0.03%: within the 1% floor, not called; the command is what changed."""
    import gzip as gz

    store = tmp_path / "h200.sqlite"
    fixture = Path(__file__).parent / "fixtures" / "h200" / "store_gpt_baseline.sqlite.gz"
    store.write_bytes(gz.decompress(fixture.read_bytes()))
    d = subprocess.run(
        GT + ["diff", "gpt", "4", "--store", str(store), "--json"], capture_output=True, text=True, timeout=180
    )
    assert d.returncode == 0, d.stderr
    changes = {c["figure"]: c for c in json.loads(d.stdout)["changes"]}
    tok = changes["tokens_per_s"]
    assert tok["called"] is True and tok["better"] is True and 2 < tok["change_pct"] < 5
    assert changes["dram_active_pct"]["called"] is False and changes["dram_active_pct"]["noise_pct"] == 1.0
    env = json.loads(d.stdout)["environment"]
    assert [e["key"] for e in env] == ["command"] and env[0]["b"].endswith("--workers 0")
