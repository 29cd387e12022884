"""The exporter's CPU cost, side by side with the sampler alone at the same period: each mode in its own
process for `--seconds`, its CPU time (user + system) read at the end; in the exporter's mode another
process scrapes /metrics every second. Medians of `--runs` runs of each, alternated.

    python benchmarks/exporter_overhead.py                # replays a recorded H200 stream (no GPU needed)
    python benchmarks/exporter_overhead.py --real         # this machine's GPUs through NVML
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "h200" / "scenario_samples.json"

CHILD = r"""
import json, resource, sys, time
mode, seconds, real, fixture = sys.argv[1], float(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
nvml = None
if not real:
    from gputriage.testing.stream_nvml import StreamNvml
    rows = [r for r in json.load(open(fixture))["healthy_bf16"]["samples"] if r["util"] >= 90]
    class Looping(StreamNvml):
        def call(self, fn, index=None, *args):
            if fn == "nvmlDeviceGetUtilizationRates" and self.i >= len(self.rows) - 1:
                self.i = -1
            return super().call(fn, index, *args)
    nvml = Looping(rows)
if mode == "sampler":
    from gputriage.backends.host import Host
    from gputriage.backends.nvml import PynvmlBackend
    from gputriage.sampling.sampler import Cadences, Sampler
    from gputriage.sampling.session import gpu_static
    nvml = nvml or PynvmlBackend(record=False, bounded=False)
    gpus, _, _ = gpu_static(nvml)
    s = Sampler(nvml, Host(), gpus, cadences=Cadences(gpu_s=0.5, ring_s=10.0))
    s.start()
    time.sleep(1.0)
    u0 = resource.getrusage(resource.RUSAGE_SELF)
    print("ready", flush=True)
    time.sleep(seconds)
    s.stop()
else:
    from gputriage.api.exporter import start_exporter
    ex = start_exporter(port=0, period_s=0.5, check_every_s=0, nvml=nvml)
    time.sleep(1.0)
    u0 = resource.getrusage(resource.RUSAGE_SELF)
    print(ex.url, flush=True)
    time.sleep(seconds)
    ex.stop()
u = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"cpu_s": u.ru_utime + u.ru_stime - u0.ru_utime - u0.ru_stime}), flush=True)
"""


def one(mode: str, seconds: float, real: bool) -> float:
    p = subprocess.Popen(
        [sys.executable, "-c", CHILD, mode, str(seconds), "1" if real else "0", str(FIXTURE)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None
    first = p.stdout.readline().strip()
    scrapes = 0
    if mode == "exporter":
        end = time.monotonic() + seconds - 0.5
        while time.monotonic() < end:
            with urllib.request.urlopen(first, timeout=5) as r:
                r.read()
            scrapes += 1
            time.sleep(1.0)
    out = p.stdout.read()
    p.wait()
    return float(json.loads(out.strip().splitlines()[-1])["cpu_s"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--real", action="store_true")
    args = ap.parse_args()
    sampler, exporter = [], []
    for _ in range(args.runs):  # CPU time from a second after start-up to the end (imports left out)
        sampler.append(one("sampler", args.seconds, args.real))
        exporter.append(one("exporter", args.seconds, args.real))
    s, e = statistics.median(sampler), statistics.median(exporter)
    print(f"{'mode':<34}{'CPU s':>8}{'% of a core':>14}")
    print(f"{'sampler alone (0.5 s period)':<34}{s:>8.2f}{100 * s / args.seconds:>13.2f}%")
    print(f"{'exporter, scraped every 1 s':<34}{e:>8.2f}{100 * e / args.seconds:>13.2f}%")
    print(
        f"exporter / sampler: {e / s:.2f}x, +{100 * (e - s) / args.seconds:.2f}% of a core; medians of {args.runs} "
        f"runs of {args.seconds:g} s each; {'NVML' if args.real else 'a replayed H200 stream'}"
    )


if __name__ == "__main__":
    main()
