"""Baselines and diffs: a workload's figures kept over several runs (median and spread), a later run
compared with them — a change called only outside the measured noise, the environment beside it, and
`run --baseline` as a CI gate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

GT = [sys.executable, "-m", "gputriage"]
LOOP = (
    "import sys, time, gputriage\nt = time.time()\nwhile time.time() - t < 2.5:\n"
    "    time.sleep(float(sys.argv[1]))\n    gputriage.step(samples=8)\n"
)


def _run(tmp_path, pause: str, *extra: str) -> subprocess.CompletedProcess:
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    return subprocess.run(
        GT
        + ["run", "--store", str(tmp_path / "runs.sqlite"), "--json", *extra, "--", sys.executable, str(script), pause],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_slower_run_falls_below_its_baseline_and_the_gate_fails(tmp_path):
    ids = []
    for _ in range(3):
        r = _run(tmp_path, "0.02")
        assert r.returncode == 0, r.stderr[-2000:]
        ids.append(json.loads(r.stdout)["id"])
    store = ["--store", str(tmp_path / "runs.sqlite")]
    saved = subprocess.run(
        GT + ["baseline", "save", "fast", *map(str, ids), *store, "--json"], capture_output=True, text=True, timeout=60
    )
    assert saved.returncode == 0, saved.stderr
    base = json.loads(saved.stdout)
    fig = base["figures"]["samples_per_s"]
    assert fig["runs"] == 3 and fig["low"] <= fig["median"] <= fig["high"] and 250 < fig["median"] < 420

    slow = _run(tmp_path, "0.05", "--baseline", "fast", "--fail-on", "warn")
    assert slow.returncode == 1, slow.stderr[-2000:]  # the gate: a warning at --fail-on warn
    report = json.loads(slow.stdout)
    f = next(f for f in report["findings"] if f["id"] == "run.regression")
    assert "samples_per_s" in f["evidence"]["regressions"] and f["evidence"]["regressions"]["samples_per_s"] < -40
    assert report["baseline"]["environment"][0]["key"] == "command"  # the loop's argument changed

    d = subprocess.run(
        GT + ["diff", "fast", str(report["id"]), *store, "--json", "--fail-on-regression"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert d.returncode == 1
    change = next(c for c in json.loads(d.stdout)["changes"] if c["figure"] == "samples_per_s")
    assert change["called"] is True and change["better"] is False and change["noise_pct"] < 20
    page = tmp_path / "diff.html"
    text = subprocess.run(
        GT + ["diff", "fast", str(report["id"]), *store, "--html", str(page)],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert "worse" in text and "environment changed" in text
    assert '<b class="worse">worse</b>' in page.read_text()  # the same diff, as a page
    run_page = tmp_path / "run.html"
    r = subprocess.run(
        GT + ["report", str(report["id"]), *store, "-o", str(run_page)], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    assert "Against the baseline (baseline fast)" in run_page.read_text()  # the stored run, its baseline with it


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
    a, b = (json.loads(_run(tmp_path, p).stdout)["id"] for p in ("0.02", "0.05"))
    d = subprocess.run(
        GT + ["diff", str(a), str(b), "--store", str(tmp_path / "runs.sqlite"), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    change = next(c for c in json.loads(d.stdout)["changes"] if c["figure"] == "samples_per_s")
    assert change["change_pct"] < -40 and "called" not in change


@pytest.mark.parametrize(
    "args, message",
    [
        (["baseline", "save", "7", "1"], "must not be a number"),
        (["diff", "nightly", "1"], "no baseline or run 'nightly'"),
        (["baseline", "save", "x", "99"], "no run 99"),
    ],
)
def test_bad_names_and_runs_are_clear_errors(tmp_path, args, message):
    store = ["--store", str(tmp_path / "runs.sqlite")]
    subprocess.run(GT + ["run", *store, "--", sys.executable, "-c", "1"], capture_output=True, timeout=60)
    r = subprocess.run(GT + args + store, capture_output=True, text=True, timeout=60)
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
        GT + ["diff", "gpt", "4", "--store", str(store), "--json"], capture_output=True, text=True, timeout=60
    )
    assert d.returncode == 0, d.stderr
    changes = {c["figure"]: c for c in json.loads(d.stdout)["changes"]}
    tok = changes["tokens_per_s"]
    assert tok["called"] is True and tok["better"] is True and 2 < tok["change_pct"] < 5
    assert changes["dram_active_pct"]["called"] is False and changes["dram_active_pct"]["noise_pct"] == 1.0
    env = json.loads(d.stdout)["environment"]
    assert [e["key"] for e in env] == ["command"] and env[0]["b"].endswith("--workers 0")
