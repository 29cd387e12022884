"""A load test stopped by Ctrl-C or SIGTERM keeps the steps that finished: printed, kept in the store, the cut
said, and the signal's exit code (130, 143). Against benchmarks/stream_server.py, a real paced server."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from serving import StreamServer

GT = [sys.executable, "-m", "gputriage"]
# 8 requests a step of 1 s each (a first chunk after 20 ms, then 50 chunks 20 ms apart): 2 s at concurrency 4,
# then 4 s at 2, then 8 s twice at 1. The signal comes once the second step has started.
SWEEP = [
    "--concurrency",
    "4,2,1,1",
    "--requests",
    "8",
    "--output-tokens",
    "50",
    "--input-tokens",
    "8",
    "--warmup",
    "0",
    "--seconds",
    "60",
    "--no-gpus",
    "--no-metrics",
]


def _cut(srv: StreamServer, store: str, sig: signal.Signals, *extra: str) -> subprocess.CompletedProcess:
    """The sweep started, then `sig` once the server has begun a 9th request (the first step's 8 are done)."""
    proc = subprocess.Popen(
        GT + ["load", srv.url, *SWEEP, "--store", store, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while srv.sent()["requests"] < 9:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the first step never finished"
            time.sleep(0.05)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.fixture
def server():
    pytest.importorskip("aiohttp")
    with StreamServer("--ttft-ms", "20", "--itl-ms", "20") as srv:
        yield srv


def test_ctrl_c_during_a_sweep_prints_and_keeps_the_finished_steps(server, tmp_path):
    store = str(tmp_path / "s.sqlite")
    r = _cut(server, store, signal.SIGINT, "--json")
    assert r.returncode == 130, r.stderr
    rep = json.loads(r.stdout)
    done = rep["steps"]
    assert 1 <= len(done) < 4 and done[0]["concurrency"] == 4 and done[0]["ok"] == 8
    assert rep["cut"] == {"signal": "SIGINT", "step": len(done) + 1, "steps": 4}
    assert rep["notes"][0].startswith(f"the sweep was cut at step {len(done) + 1} of 4 (SIGINT)")
    assert r.stderr.count("\n") == 1 and f"kept as load {rep['id']}" in r.stderr
    kept = subprocess.run(
        GT + ["load", "--show", str(rep["id"]), "--store", store, "--json"], capture_output=True, text=True, timeout=60
    )
    assert kept.returncode == 0 and json.loads(kept.stdout)["steps"] == done


def test_sigterm_during_a_sweep_prints_the_finished_steps_and_exits_143(server, tmp_path):
    store = str(tmp_path / "s.sqlite")
    r = _cut(server, store, signal.SIGTERM)
    assert r.returncode == 143, r.stderr
    assert "the sweep was cut at step" in r.stdout and "(SIGTERM)" in r.stdout
    rows = [line.split() for line in r.stdout.splitlines()]
    assert ["4", "8"] in [row[:2] for row in rows]  # the first step's row: its load and 8 requests answered
    runs = json.loads(
        subprocess.run(GT + ["runs", "--store", store, "--json"], capture_output=True, text=True, timeout=60).stdout
    )
    assert [r["kind"] for r in runs["runs"]] == ["load"]


def test_a_signal_before_any_step_finished_keeps_nothing(tmp_path):
    """Stopped during the first step: one line, the signal's code, and nothing in the store."""
    pytest.importorskip("aiohttp")
    with StreamServer("--ttft-ms", "20", "--itl-ms", "20") as srv:
        store = tmp_path / "s.sqlite"
        proc = subprocess.Popen(
            GT + ["load", srv.url, *SWEEP, "--store", str(store)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 120
        while srv.sent()["requests"] < 1:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and out == ""
    assert err.count("\n") == 1 and "before a step finished" in err
    runs = subprocess.run(GT + ["runs", "--store", str(store), "--json"], capture_output=True, text=True, timeout=60)
    assert json.loads(runs.stdout)["runs"] == []
