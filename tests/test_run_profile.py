"""`run --profile` on the CPU: the injected profiler writes a trace the analysis reads, for a loop
with an optimizer (stopped after N steps), a module loop, and plain tensor code (signal path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
GT = [sys.executable, "-m", "gputriage"]
WORKLOAD = """
import sys, time, torch
mode = sys.argv[1]
m = torch.nn.Linear(128, 128); opt = torch.optim.SGD(m.parameters(), lr=0.01)
a = torch.randn(128, 128)
t = time.time()
while time.time() - t < (1.5 if mode == "short" else 3.5):
    if mode == "optim":
        m(torch.randn(32, 128)).pow(2).mean().backward(); opt.step(); opt.zero_grad()
    else:
        a = torch.tanh(a @ a)
print("workload done")
"""


@pytest.mark.parametrize("mode", ["optim", "tensor"])
def test_profile_injection_writes_a_trace(tmp_path, mode):
    script = tmp_path / "w.py"
    script.write_text(WORKLOAD)
    kept = tmp_path / "kept.json"
    env = dict(os.environ, GPUTRIAGE_PROFILE_CUDA="0")
    r = subprocess.run(GT + ["run", "--no-store", "--json", "--profile", "--profile-skip", "0.3", "--profile-steps", "5",
                             "--keep-trace", str(kept), "--", sys.executable, str(script), mode],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "workload done" in r.stdout
    report = json.loads(r.stdout[r.stdout.index("{"):])
    assert kept.exists() and kept.stat().st_size > 1000
    # a CPU-only trace has no GPU activity: the analysis says so instead of guessing
    assert "no GPU activity" in " ".join(report["trace"]["ranks"][0]["problems"])
    ops = {e.get("name") for e in json.loads(kept.read_text())["traceEvents"] if e.get("cat") == "cpu_op"}
    assert ("aten::addmm" if mode == "optim" else "aten::mm") in ops
    log = report["trace"]["profile_log"]
    if mode == "optim":
        assert log == ["started at optimizer step", "stopped at optimizer step after 5 optimizer steps"]
    else:
        assert log[0] == "started at signal" and log[1].startswith("stopped at signal")


def test_profile_kept_when_the_workload_ends_inside_the_window(tmp_path):
    script = tmp_path / "w.py"
    script.write_text(WORKLOAD)
    env = dict(os.environ, GPUTRIAGE_PROFILE_CUDA="0", GPUTRIAGE_PROFILE_WINDOW_S="30")
    r = subprocess.run(GT + ["run", "--no-store", "--json", "--profile", "--profile-skip", "0.2", "--", sys.executable,
                             str(script), "short"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(r.stdout[r.stdout.index("{"):])
    assert report["trace"]["profile_log"] == ["started at signal", "stopped at exit after 0 optimizer steps"]
    assert "no GPU activity" in " ".join(report["trace"]["ranks"][0]["problems"])


def test_profile_needs_a_python_command(tmp_path):
    r = subprocess.run(GT + ["run", "--no-store", "--profile", "--", "true"], capture_output=True, text=True)
    assert r.returncode == 2 and "Python command" in r.stderr
