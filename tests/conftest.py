"""Shared fixtures: a recorded H200 (its raw NVML calls) and a fixture host root."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gputriage.collect import collect_snapshot
from gputriage.model.snapshot import Snapshot
from gputriage.testing.fake_host import FakeHost
from gputriage.testing.fake_nvml import FakeNvml

FIXTURES = Path(__file__).parent / "fixtures"
H200_SNAPSHOT = FIXTURES / "h200" / "snapshot_idle.json"
if not H200_SNAPSHOT.exists():
    H200_SNAPSHOT = FIXTURES / "h200" / "snapshot_idle_first.json"

# /proc/stat at two instants 0.5 s apart on a quiet 4-core host (jiffies)
STAT_QUIET = [
    "cpu  400 0 200 3400 0 0 0 0 0 0\ncpu0 100 0 50 850 0 0 0 0 0 0\ncpu1 100 0 50 850 0 0 0 0 0 0\n"
    "cpu2 100 0 50 850 0 0 0 0 0 0\ncpu3 100 0 50 850 0 0 0 0 0 0\n",
    "cpu  404 0 202 3594 0 0 0 0 0 0\ncpu0 101 0 50 899 0 0 0 0 0 0\ncpu1 101 0 51 898 0 0 0 0 0 0\n"
    "cpu2 101 0 50 899 0 0 0 0 0 0\ncpu3 101 0 51 898 0 0 0 0 0 0\n",
]
MEMINFO = "MemTotal: 131072000 kB\nMemFree: 100000000 kB\nMemAvailable: 120000000 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n"
VMSTAT = ["pgmajfault 100\npswpin 0\n", "pgmajfault 100\npswpin 0\n"]
PSI = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
NETDEV = (
    "Inter-|   Receive |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets "
    "errs drop fifo colls carrier compressed\n"
    "  eth0: 1000000 10000 0 0 0 0 0 0 2000000 20000 0 0 0 0 0 0\n"
)


def recorded_nvml() -> dict[str, Any]:
    return json.loads(H200_SNAPSHOT.read_text())["raw"]["nvml"]


@pytest.fixture
def h200() -> FakeNvml:
    return FakeNvml(recorded_nvml())


def host_files(**overrides: Any) -> dict[str, Any]:
    files: dict[str, Any] = {
        "/proc/stat": STAT_QUIET,
        "/proc/meminfo": MEMINFO,
        "/proc/vmstat": VMSTAT,
        "/proc/loadavg": "0.10 0.2 0.3 1/100 1\n",
        "/proc/pressure/cpu": PSI,
        "/proc/pressure/memory": PSI,
        "/sys/fs/cgroup/cpu.max": "max 100000\n",
        "/proc/mounts": "/dev/nvme0n1p1 / ext4 rw 0 0\n/dev/nvme1n1 /work xfs rw 0 0\n",
        "/proc/net/dev": NETDEV,
        "/proc/1/cgroup": "0::/\n",
    }
    files.update(overrides)
    return files


@pytest.fixture
def make_host(tmp_path: Path):
    def make(
        files: dict[str, Any] | None = None,
        dev_nodes: tuple[str, ...] = ("nvidia0", "nvidiactl", "nvidia-uvm"),
        **kw: Any,
    ) -> FakeHost:
        (tmp_path / "dev").mkdir(exist_ok=True)
        for node in dev_nodes:
            (tmp_path / "dev" / node).touch()
        kw.setdefault("kernel_log", "[    1.0] Linux version 6.18\n")
        kw.setdefault("affinity", list(range(4)))
        kw.setdefault(
            "statvfs",
            {
                "/work": {"total_bytes": 2 * 10**12, "free_bytes": 10**12},
                "/dev/shm": {"total_bytes": 64 * 2**30, "free_bytes": 64 * 2**30},
            },
        )
        return FakeHost(tmp_path, files=files if files is not None else host_files(), **kw)

    return make


@pytest.fixture
def collect(make_host):
    """collect(nvml, **host kwargs) → Snapshot, with no helper children."""

    def run(nvml: FakeNvml, files: dict[str, Any] | None = None, **kw: Any) -> Snapshot:
        return collect_snapshot(nvml, make_host(files, **kw), window_s=0.5, load_ms=0, use_framework=False)

    return run


# --- the run judge over recorded samples -----------------------------------------------------
from gputriage.model.run import GpuStatic  # noqa: E402
from gputriage.testing.recordings import H200_STATIC, judged_samples  # noqa: E402

judged = judged_samples  # the run judge's report over recorded samples of GPU 0


def verdict_of(samples, static: GpuStatic = H200_STATIC):
    """GPU 0's verdict over recorded samples."""
    return judged(samples, static).verdict.per_gpu["0"]
