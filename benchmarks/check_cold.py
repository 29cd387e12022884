"""`check` cold and warm with a GPU the driver reports and torch installed: each run a fresh process that
imports the CLI and reads this machine (its host, its torch) through a recorded H200's NVML, the
framework probe's cache emptied before each cold run. Median of N runs. Run it against another source
tree (`--src DIR`) to compare two versions.

    python benchmarks/check_cold.py [--runs 5] [--src path/to/src]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = ROOT / "tests" / "fixtures" / "h200" / "snapshot_idle.json"
ONE_CHECK = f"""
import io, json, sys
from rich.console import Console
import gputriage.cli.main  # what `gputriage check` imports before it runs
from gputriage import api
from gputriage.backends.host import Host
from gputriage.collect import collect_snapshot
from gputriage.report.check_terminal import render
from gputriage.testing.fake_nvml import FakeNvml

nvml = FakeNvml(json.loads(open({str(SNAPSHOT)!r}).read())["raw"]["nvml"])
snap = collect_snapshot(nvml, Host(), load_ms=0, use_framework=True, use_cache=True)
render(api.check(snap), Console(file=io.StringIO(), width=100))
print(json.dumps({{f.name: str(f.value) for f in snap.facts if f.name.startswith("torch.")}}))
"""


def settle(cache: Path, timeout_s: float = 120.0) -> None:
    """Wait for a child a cold check left behind to fill the cache (so it does not load the next run)."""
    deadline = time.monotonic() + timeout_s
    while not (cache / "framework.json").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(0.5)  # its exit


def one(src: Path, cache: Path, cold: bool) -> tuple[float, str]:
    if cold:
        shutil.rmtree(cache, ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=str(src), GPUTRIAGE_CACHE_DIR=str(cache))
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", ONE_CHECK], env=env, capture_output=True, text=True, timeout=300)
    wall_s = time.perf_counter() - t0
    if cold:
        settle(cache)
    if r.returncode != 0:
        raise SystemExit(r.stderr[-2000:])
    return wall_s, r.stdout.strip().splitlines()[-1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--src", type=Path, default=ROOT / "src")
    args = ap.parse_args()
    cache = Path(tempfile.mkdtemp(prefix="gputriage-cache-"))
    try:
        print(f"source: {args.src}")
        print(f"{'case':34} {'median s':>9} {'min s':>7} {'max s':>7}")
        for name, cold in (("check, cold (no cached torch answer)", True), ("check, warm (cached)", False)):
            runs = [one(args.src, cache, cold) for _ in range(args.runs)]
            walls = [w for w, _ in runs]
            print(f"{name:34} {statistics.median(walls):9.3f} {min(walls):7.3f} {max(walls):7.3f}")
            print(f"  torch facts (last run): {runs[-1][1]}")
    finally:
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
