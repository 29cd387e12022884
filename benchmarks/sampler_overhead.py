"""Sampler overhead, on a GPU machine.

1. CPU cost of `gputriage`'s sampler at 10 Hz (NVML + GPM + host + a process tree) over 60 s, as a
   share of one core, side by side with a plain Python NVML+GPM loop at 10 Hz.
2. A bf16 training loop's throughput with and without `gputriage run` around it, alternating,
   median of N pairs.

    python benchmarks/sampler_overhead.py [--seconds 60] [--pairs 5] [--loop-seconds 8]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "examples" / "pathologies" / "healthy.py"


def sampler_cpu(seconds: float) -> float:
    from gputriage.backends.host import Host
    from gputriage.backends.nvml import PynvmlBackend
    from gputriage.monitor.sampler import Sampler

    nvml = PynvmlBackend(record=False, bounded=False)
    nvml.init()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(%f)" % (seconds + 5)])
    s = Sampler(nvml, Host(), [0], pid=child.pid)
    s.start()
    time.sleep(seconds)
    s.stop()
    child.kill()
    return 100.0 * s.busy_s / seconds


def plain_loop_cpu(seconds: float) -> float:
    import pynvml

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    prev = pynvml.nvmlGpmSampleAlloc()
    pynvml.nvmlGpmSampleGet(h, prev)
    c0, t_end = time.thread_time(), time.monotonic() + seconds
    while time.monotonic() < t_end:
        cur = pynvml.nvmlGpmSampleAlloc()
        pynvml.nvmlGpmSampleGet(h, cur)
        req = pynvml.c_nvmlGpmMetricsGet_t()
        req.version, req.numMetrics, req.sample1, req.sample2 = pynvml.NVML_GPM_METRICS_GET_VERSION, 5, prev, cur
        for i, mid in enumerate((1, 2, 3, 5, 10)):
            req.metrics[i].metricId = mid
        pynvml.nvmlGpmMetricsGet(req)
        pynvml.nvmlDeviceGetUtilizationRates(h)
        pynvml.nvmlDeviceGetPowerUsage(h)
        pynvml.nvmlGpmSampleFree(prev)
        prev = cur
        time.sleep(0.1)
    return 100.0 * (time.thread_time() - c0) / seconds


def throughput(wrapped: bool, loop_s: float) -> float:
    argv = [sys.executable, str(TRAIN), "--seconds", str(loop_s)]
    if wrapped:
        argv = [sys.executable, "-m", "gputriage", "run", "--no-store", "--quiet", "--"] + argv
    out = subprocess.run(argv, capture_output=True, text=True).stdout
    return float(re.search(r"throughput: ([0-9.]+)", out).group(1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--loop-seconds", type=float, default=8.0)
    args = ap.parse_args()
    ours = sampler_cpu(args.seconds)
    plain = plain_loop_cpu(min(args.seconds, 20.0))
    rows = []
    for _ in range(args.pairs):
        rows.append((throughput(False, args.loop_seconds), throughput(True, args.loop_seconds)))
    bare = statistics.median(r[0] for r in rows)
    wrapped = statistics.median(r[1] for r in rows)
    print(f"{'measure':52} {'value':>12}")
    print(f"{'gputriage sampler, 10 Hz, GPM+host+tree, % of one core':52} {ours:11.2f}%")
    print(f"{'plain Python NVML+GPM loop, 10 Hz, % of one core':52} {plain:11.2f}%")
    print(f"{'bf16 GEMM loop alone, TFLOP/s (median of pairs)':52} {bare:12.1f}")
    print(f"{'same under gputriage run, TFLOP/s':52} {wrapped:12.1f}")
    print(f"{'slow-down under gputriage run':52} {100 * (1 - wrapped / bare):11.2f}%")
    print("pairs (alone, wrapped):", [(round(a, 1), round(b, 1)) for a, b in rows])


if __name__ == "__main__":
    main()
