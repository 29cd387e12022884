"""The GPU side of `memory`, as far as a CPU can check it: the five planted examples each mark their line, the
recording script finds them and judges a verdict against them, its arguments; the read-speed benchmark's snapshot
is one the reader takes; the cost benchmark's command line."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from gputriage.diagnosis.run.judge import judge
from gputriage.memory.analyze import analyze
from gputriage.memory.snapshot import parse
from gputriage.sampling.store import Store
from gputriage.testing.oom_runs import H100, recorded_report, recording, samples

ROOT = Path(__file__).parent.parent


def _module(name: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


record = _module("record_oom")


@pytest.mark.parametrize("case", sorted(record.CASES))
def test_each_example_marks_its_planted_line_in_code(case):
    line = record.planted_line(case)
    text = (ROOT / "examples" / "oom" / f"{case}.py").read_text().splitlines()[line - 1]
    assert "# planted" in text and not text.lstrip().startswith(("#", '"'))
    compile((ROOT / "examples" / "oom" / f"{case}.py").read_text(), f"{case}.py", "exec")


def test_a_verdict_is_right_with_its_cause_and_the_planted_line_on_top_or_asking():
    line = record.planted_line("growing")
    top = [{"file": "/x/examples/oom/growing.py", "line": line}, {"file": "/x/y.py", "line": 3}]
    right = {"cause": "memory.growing", "state": {"top_lines": top, "oom": {"line": "/x/examples/oom/growing.py:25"}}}
    assert record.check(right, "growing")[0]
    assert not record.check({**right, "cause": "memory.peak_near_capacity"}, "growing")[0]
    moved = {"cause": "memory.growing", "state": {"top_lines": top[1:], "oom": {"line": "/x/growing.py:25"}}}
    ok, said = record.check(moved, "growing")
    assert not ok and "missing" in said
    asked = {
        "cause": "memory.request_too_large",
        "state": {"top_lines": [], "oom": {"line": f"/x/too_large.py:{record.planted_line('too_large')}"}},
    }
    ok, said = record.check(asked, "too_large")
    assert ok and "the line that asked" in said


def test_the_recording_script_says_what_it_would_run_and_refuses_an_unknown_case(tmp_path, capsys):
    assert record.main(["--out", str(tmp_path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert all(f"examples/oom/{c}.py" in out for c in record.CASES) and "hold_memory.py" in out
    with pytest.raises(SystemExit) as exc:
        record.main(["--out", str(tmp_path), "--cases", "nope"])
    assert exc.value.code == 2
    assert not list(tmp_path.iterdir())


def test_the_read_speed_benchmark_builds_a_snapshot_the_reader_takes():
    speed = _module("memory_read_speed")
    snap = parse(speed.build(1.0))
    s = analyze(snap)
    assert s.segments > 10 and s.series is not None and s.series.events > 1000
    first = s.top_lines[0]  # the workload's own line, or a library's called from it
    assert ("project/model_" in first.file) if first.own else ("project/model_" in (first.via or ""))


def test_the_cost_benchmark_s_command_line():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "memory_history_cost.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and "--pairs" in out.stdout


def test_the_recording_keeps_the_run_s_samples_and_the_cause_its_own_report_named(tmp_path):
    """What `record_oom.py` keeps of a run: the cause its report named, and its samples cut from the store — which
    `testing.oom_runs` then replays instead of the samples it rebuilds from the report."""
    case = "growing"
    then = recorded_report(case)
    db = Store(tmp_path / "runs.sqlite")
    run_id = db.begin_run("run", then.command, then.meta)
    kept = samples(then)[:-1]  # not the samples the report would rebuild: told apart below
    db.add_samples(run_id, kept)
    db.end_run(msgspec.structs.replace(then, id=run_id))
    db.close()
    report = msgspec.to_builtins(then) | {"id": run_id, "memory": {"cause": "memory.growing"}}
    (tmp_path / "run.json").write_text(json.dumps(report))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    assert record.run_cause(tmp_path, case, env) == "memory.growing"
    assert (tmp_path / "run.samples.json.gz").exists()
    for name in (f"{case}.run.json.gz", f"{case}.oom.json", f"{case}.oom.pickle.gz", f"{case}.oom.processes.json"):
        shutil.copy(H100 / name, tmp_path / name)
    shutil.move(tmp_path / "run.samples.json.gz", tmp_path / f"{case}.run.samples.json.gz")
    rec, code = recording(case, tmp_path)
    assert rec.windows.count == len(kept)  # the samples the store kept
    assert judge(rec, code).memory is not None
    assert record.run_cause(tmp_path / "none", case, env) == "no run report"
