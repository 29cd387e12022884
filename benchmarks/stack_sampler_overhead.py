"""What the stack sampler costs the workload it runs in (`gputriage.inworkload.stack_sampler`, started as the
injected hook starts it): loops run with and without it, alternated in pairs (the order swapped every other pair),
each pair's rate ratio; the median and spread of the slowdown per loop. On a GPU (torch.cuda available) a
launch-bound loop of small kernels and a GEMM loop; everywhere, a launch-bound-like loop of small torch CPU ops
(numpy, or pure Python, where torch is not installed) and a Python loop building lists. Also the time of one
sampling round (every thread's stack walked and classified) with the threads of a training process, and what it
adds up to at the sampler's rate.

    python benchmarks/stack_sampler_overhead.py [--seconds 4] [--runs 5] [--only small_ops,lists,...]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# loaded by its path, as the workload loads it: the benchmark runs where only the standard library and torch are
SAMPLER = Path(__file__).resolve().parent.parent / "src" / "gputriage" / "inworkload" / "stack_sampler.py"
_spec = importlib.util.spec_from_file_location("gputriage_stack_sampler", SAMPLER)
assert _spec is not None and _spec.loader is not None
stack_sampler = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(stack_sampler)

CHILD = r"""
import importlib.util, os, sys, time
sampled, loop, seconds = sys.argv[1] == "1", sys.argv[2], float(sys.argv[3])
if sampled:  # loaded by its path, as the injected sitecustomize loads it, not through the gputriage package
    spec = importlib.util.spec_from_file_location("gputriage_stack_sampler", sys.argv[4])
    module = importlib.util.module_from_spec(spec)
    sys.modules["gputriage_stack_sampler"] = module
    spec.loader.exec_module(module)
    module.main()
sync = lambda: None
if loop in ("kernels", "gemm"):
    import torch
    sync = torch.cuda.synchronize
    if loop == "kernels":
        x = torch.randn(64, 64, device="cuda"); w = torch.randn(64, 64, device="cuda")
        def step():
            y = x
            for _ in range(20):
                y = torch.relu(y @ w) + 1.0
            return 60  # kernels
    else:
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
        def step():
            a @ b
            return 2 * 8192 ** 3 / 1e12  # TFLOP
elif loop == "small_ops":
    try:
        import torch
        x = torch.randn(64, 64); w = torch.randn(64, 64)
        relu = torch.relu
    except ImportError:
        try:
            import numpy as np
            x = np.random.rand(64, 64); w = np.random.rand(64, 64)
            relu = lambda t: np.maximum(t, 0)
        except ImportError:
            x = w = 1.0
            relu = lambda t: max(t, 0.0)
    def step():
        y = x
        for _ in range(20):
            y = relu(y * w) + 1.0  # small ops, one after the other: the host's time is the launches'
        return 60
else:
    def step():
        rows = [[i * 0.5 for i in range(200)] for _ in range(50)]
        return len(rows)
for _ in range(20):
    step()
sync()
import threading
sampler = next((t for t in threading.enumerate() if t.name == "gputriage-stacks"), None)
clock = time.pthread_getcpuclockid(sampler.ident) if sampler is not None else None
cpu0 = time.clock_gettime(clock) if clock is not None else 0.0
t0, done = time.perf_counter(), 0.0
while time.perf_counter() - t0 < seconds:
    done += step()
sync()
elapsed = time.perf_counter() - t0
print(done / elapsed, (time.clock_gettime(clock) - cpu0) / elapsed if clock is not None else 0.0)
"""

ROUND = r"""
import importlib.util, sys, threading, time, queue
spec = importlib.util.spec_from_file_location("gputriage_stack_sampler", sys.argv[1])
ss = importlib.util.module_from_spec(spec); spec.loader.exec_module(ss)
q = queue.Queue()
def deep(n):  # a thread deep in a framework's call stack, blocked: autograd's, a pin-memory thread
    return deep(n - 1) if n else q.get()
for _ in range(3):
    threading.Thread(target=deep, args=(40,), daemon=True).start()
time.sleep(0.2)
sampler = ss.StackSampler("/nonexistent")
sampler._refresh_skipped()
for _ in range(200):
    sampler.sample()  # warm: files classified, lines read
n = 5000
t = time.thread_time()
for _ in range(n):
    sampler.sample()
round_us = (time.thread_time() - t) / n * 1e6
frame = next(f for i, f in sys._current_frames().items() if i != threading.get_ident())
t = time.thread_time()
for _ in range(n):  # a thread that moved since the last round: its stack walked again (40 frames)
    sampler.classifier.classify(frame, True)
print(round_us, (time.thread_time() - t) / n * 1e6, len(sys._current_frames()))
"""

LOOPS = {
    "kernels": "launch-bound loop, 60 small CUDA kernels a step (kernels/s)",
    "gemm": "bf16 GEMM loop, 8192^3 (TFLOP/s)",
    "small_ops": "launch-bound-like loop of small CPU ops (ops/s)",
    "lists": "Python loop building lists (lists/s)",
}


def rate(sampled: bool, loop: str, seconds: float, folder: str) -> tuple[float, float]:
    """The loop's rate, and the sampler thread's CPU time as a share of the loop's (0 without it)."""
    env = dict(os.environ)
    env.pop(stack_sampler.DIR_ENV, None)
    if sampled:
        env[stack_sampler.DIR_ENV] = folder
    out = subprocess.run(
        [sys.executable, "-c", CHILD, "1" if sampled else "0", loop, str(seconds), str(SAMPLER)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    done, cpu = out.strip().splitlines()[-1].split()
    return float(done), float(cpu)


def cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--runs", type=int, default=5, help="pairs per loop")
    ap.add_argument("--only", default=None, help="comma-separated loops: " + ", ".join(LOOPS))
    args = ap.parse_args()
    loops = [x for x in (args.only.split(",") if args.only else LOOPS) if x in LOOPS]
    if not cuda():
        loops = [x for x in loops if x not in ("kernels", "gemm")]
    round_us, walk_us, threads = (
        float(x)
        for x in subprocess.run(
            [sys.executable, "-c", ROUND, str(SAMPLER)], capture_output=True, text=True, check=True
        ).stdout.split()
    )
    per_s = (round_us + walk_us) * stack_sampler.RATE_HZ
    print(
        f"CPU time of one sampling round, {threads:.0f} threads (3 blocked 40 frames deep): {round_us:.1f} us; a "
        f"stack of 40 frames that moved, walked again: {walk_us:.1f} us; at {stack_sampler.RATE_HZ:.0f} Hz with "
        f"one such thread: {per_s / 1e4:.2f}% of one core\n",
        flush=True,
    )
    print(f"{'loop':<58} {'without':>10} {'with':>10} {'slowdown':>9} {'pairs (min..max)':>18} {'sampler CPU':>12}")
    with tempfile.TemporaryDirectory(prefix="gputriage-stacks-") as folder:
        for loop in loops:
            ratios, without, with_, cpu = [], [], [], []
            for i in range(args.runs):
                order = (False, True) if i % 2 == 0 else (True, False)  # drift cancels over pairs
                got = {s: rate(s, loop, args.seconds, folder) for s in order}
                without.append(got[False][0])
                with_.append(got[True][0])
                cpu.append(got[True][1])
                ratios.append(1.0 - got[True][0] / got[False][0])
            print(
                f"{LOOPS[loop]:<58} {statistics.median(without):>10.4g} {statistics.median(with_):>10.4g} "
                f"{100 * statistics.median(ratios):>8.2f}% {100 * min(ratios):>8.2f}..{100 * max(ratios):.2f}% "
                f"{100 * statistics.median(cpu):>11.2f}%",
                flush=True,
            )
    print(
        "\nslowdown: the median over pairs of 1 - rate with / rate without; sampler CPU: its thread's CPU time as a "
        "share of the loop's wall time (what it takes from a core, the interpreter lock included)"
    )


if __name__ == "__main__":
    main()
