"""What the allocator counters cost the workload they run in: a launch-bound loop (tiny kernels, the most
sensitive to a thread taking the GIL) and a GEMM loop, each run with and without the counters' thread
(`gputriage.inworkload.allocator_counters`, started as the injected hook starts it), alternated, `--runs` pairs;
also the time of one read of the allocator's statistics. Needs a GPU.

    python benchmarks/allocator_overhead.py [--seconds 5] [--runs 3] [--only launch|gemm]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

from gputriage.inworkload import allocator_counters

CHILD = r"""
import os, sys, time, torch
counters, loop, seconds = sys.argv[1] == "1", sys.argv[2], float(sys.argv[3])
if counters:  # loaded by its path, as the injected sitecustomize loads it, not through the gputriage package
    import importlib.util
    spec = importlib.util.spec_from_file_location("gputriage_allocator_counters", sys.argv[4])
    module = importlib.util.module_from_spec(spec)
    sys.modules["gputriage_allocator_counters"] = module
    spec.loader.exec_module(module)
    module.main()
if loop == "launch":
    x = torch.randn(64, 64, device="cuda"); w = torch.randn(64, 64, device="cuda")
    def step():
        y = x
        for _ in range(20):
            y = torch.relu(y @ w) + 1.0
        return 60  # three kernels an iteration
else:
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
    def step():
        a @ b
        return 2 * 8192 ** 3 / 1e12
for _ in range(20):
    step()
torch.cuda.synchronize()
t0, done = time.perf_counter(), 0.0
while time.perf_counter() - t0 < seconds:
    done += step()
torch.cuda.synchronize()
print(done / (time.perf_counter() - t0))
"""

READ = r"""
import time, torch
torch.zeros(1, device="cuda")
t = time.perf_counter()
for _ in range(2000):
    torch.cuda.memory.memory_stats_as_nested_dict(0)
print((time.perf_counter() - t) / 2000 * 1e6)
"""


def rate(counters: bool, loop: str, seconds: float, folder: str) -> float:
    env = dict(os.environ)
    env.pop("GPUTRIAGE_PROGRESS_DIR", None)
    if counters:
        env["GPUTRIAGE_PROGRESS_DIR"] = folder
    out = subprocess.run(
        [sys.executable, "-c", CHILD, "1" if counters else "0", loop, str(seconds), allocator_counters.__file__],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return float(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", choices=("launch", "gemm"), default=None)
    args = ap.parse_args()
    read_us = float(
        subprocess.run([sys.executable, "-c", READ], capture_output=True, text=True, check=True).stdout.strip()
    )
    print(f"one read of the allocator's statistics (one GPU): {read_us:.1f} µs; two a second")
    print(f"{'loop':<8} {'unit':<10} {'without':>12} {'with':>12} {'with/without':>13}")
    with tempfile.TemporaryDirectory() as folder:
        for loop, unit in (("launch", "kernels/s"), ("gemm", "TFLOP/s")):
            if args.only and loop != args.only:
                continue
            without, with_ = [], []
            for _ in range(args.runs):
                without.append(rate(False, loop, args.seconds, folder))
                with_.append(rate(True, loop, args.seconds, folder))
            a, b = statistics.median(without), statistics.median(with_)
            print(
                f"{loop:<8} {unit:<10} {a:>12,.1f} {b:>12,.1f} {b / a:>13.4f}   runs without "
                f"{min(without):,.1f}-{max(without):,.1f}, with {min(with_):,.1f}-{max(with_):,.1f}"
            )


if __name__ == "__main__":
    main()
