"""`gputriage watch` stopped as supervisors stop it: SIGTERM (systemd, docker stop, kill) and SIGHUP (a closed
terminal or ssh session) end it as Ctrl-C does, with its summary printed and the watch kept as finished, not
cut. Each runs the real command in a child process, on a recorded H200 (its NVML calls replayed) and on this
machine as it is (no GPU in CI)."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

GT = [sys.executable, "-m", "gputriage"]
SCENARIOS = Path(__file__).parent / "fixtures" / "h200" / "scenario_samples.json"
# `gputriage watch` with NVML answered from a recorded 10 Hz stream of an H200 running bf16 GEMMs
ON_RECORDED_H200 = [
    sys.executable,
    "-c",
    (
        "import json, sys\n"
        "import gputriage.backends.nvml as nvml\n"
        "from gputriage.testing.stream_nvml import StreamNvml\n"
        "rows = json.load(open(sys.argv[1]))['healthy_bf16']['samples']\n"
        "nvml.PynvmlBackend = lambda **_kw: StreamNvml(rows)\n"
        "from gputriage.cli.main import main\n"
        "sys.argv = ['gputriage', *sys.argv[2:]]\n"
        "main()\n"
    ),
    str(SCENARIOS),
]


def _started(store: Path, p: subprocess.Popen, deadline_s: float = 60.0) -> None:
    """Until the watch has opened its run in the store (its signal handlers are set before it does)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        assert p.poll() is None, p.communicate()
        if store.exists():
            try:
                with sqlite3.connect(store) as db:
                    if db.execute("SELECT count(*) FROM runs").fetchone()[0]:
                        return
            except sqlite3.Error:
                pass  # the store is being made
        time.sleep(0.1)
    raise AssertionError("the watch did not start within a minute")


@pytest.mark.parametrize("machine", ["recorded_h200", "this_machine"])
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_supervisors_stop_ends_the_watch_with_its_summary_kept_as_finished(stop, machine, tmp_path):
    store = tmp_path / "w.sqlite"
    command = (ON_RECORDED_H200 if machine == "recorded_h200" else GT) + ["watch", "--store", str(store)]
    p = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _started(store, p)
        time.sleep(1.0)  # a second of samples, whatever the machine's load (the summary counts them)
        p.send_signal(stop)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 0, err[-2000:]
    assert "gputriage watch #1" in out and "Traceback" not in err
    if machine == "recorded_h200":
        assert "NVIDIA H200" in out or "GPU 0" in out, out[-2000:]
    runs = json.loads(
        subprocess.run(
            GT + ["runs", "--store", str(store), "--json"], capture_output=True, text=True, timeout=60
        ).stdout
    )["runs"]
    assert len(runs) == 1 and runs[0]["kind"] == "watch"
    assert runs[0]["complete"] is True and runs[0]["ended"] is not None and runs[0]["samples"] >= 1
