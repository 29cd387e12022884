"""`check` wall time: live on this machine and replaying a recorded H200 snapshot (`--from`),
each as a fresh process, median of N runs. Prints a table.

    python benchmarks/check_speed.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

SNAPSHOT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "h200" / "snapshot_idle.json"


def wall(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    gt = [sys.executable, "-m", "gputriage", "check", "--fail-on", "never", "--json"]
    cases = {
        "check (live, this machine)": gt,
        "check --from h200 snapshot": gt + ["--from", str(SNAPSHOT)],
        "python -c pass (interpreter alone)": [sys.executable, "-c", "pass"],
    }
    print(f"{'case':40} {'median s':>9} {'min s':>7} {'max s':>7}")
    for name, argv in cases.items():
        walls = [wall(argv) for _ in range(args.runs)]
        print(f"{name:40} {statistics.median(walls):9.3f} {min(walls):7.3f} {max(walls):7.3f}")


if __name__ == "__main__":
    main()
