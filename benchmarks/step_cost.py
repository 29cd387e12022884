"""What `gputriage.step()` costs the workload per call: with nothing listening, and under
`gputriage run` (counters in a mapped file). Each case in a fresh interpreter; the median of 7
timings of 1,000,000 calls; a plain Python no-op call alongside for scale.

    python benchmarks/step_cost.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile

CODE = """
import sys, time, gputriage
step = gputriage.step
def noop(samples=0.0, tokens=0.0, steps=1.0):
    pass
fn = noop if sys.argv[1] == "noop" else step
N = 1_000_000
out = []
for _ in range(7):
    t = time.perf_counter()
    for _ in range(N):
        fn(samples=32, tokens=16384)
    out.append((time.perf_counter() - t) / N * 1e9)
print(" ".join(f"{x:.1f}" for x in out))
"""


def timed(case: str, env: dict[str, str]) -> float:
    r = subprocess.run(
        [sys.executable, "-c", CODE, case], capture_output=True, text=True, check=True, env={**os.environ, **env}
    )
    return statistics.median(float(x) for x in r.stdout.split())


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        rows = [
            ("a plain Python function that does nothing", timed("noop", {"GPUTRIAGE_PROGRESS_DIR": ""})),
            ("gputriage.step(), nothing listening", timed("step", {"GPUTRIAGE_PROGRESS_DIR": ""})),
            ("gputriage.step() under gputriage run", timed("step", {"GPUTRIAGE_PROGRESS_DIR": folder})),
        ]
    print(f"{'case':45} {'ns per call':>12}")
    for name, ns in rows:
        print(f"{name:45} {ns:12.0f}")


if __name__ == "__main__":
    main()
