"""Sampler overhead, on a GPU machine.

1. CPU cost over the same `--seconds` window, side by side (all three run at once; `--alone`: one
   after the other, each over its own window):
   - gputriage's sampler as `gputriage run` runs it (GPU counters and GPM at the driver's refresh, or
     `--period`; host and process tree once a second; samples cut into windows and written to a
     SQLite store in 1 s batches): the sampling thread's CPU time, and the whole process's CPU time
     over the window (NVML helper threads included);
   - a plain Python NVML+GPM loop at 10 Hz (a fresh process; its thread CPU time);
   - `nvidia-smi dmon` at 1 Hz (its process CPU time).
2. CPU cost per NVML call the sampler makes (microseconds, 300 calls each, back to back), and
   (`--in-situ S`) per reading when it runs alone at 10 Hz for S seconds, as the sampler sees it
   (caches gone cold between samples); the refresh period of the driver's own counters
   (nvmlDeviceGetSamples: GPU-Util, power, SM clock).
3. A bf16 training loop's throughput with and without `gputriage run` around it, alternating,
   median of N pairs.

    python benchmarks/sampler_overhead.py [--seconds 60] [--pairs 5] [--loop-seconds 8] [--alone]
                                          [--in-situ 5] [--period S]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "examples" / "pathologies" / "healthy.py"

PLAIN_LOOP = r"""
import sys, time, pynvml
seconds = float(sys.argv[1])
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
print(100.0 * (time.thread_time() - c0) / seconds)
"""


def process_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def side_by_side(seconds: float, alone: bool = False, period_s: float | None = None) -> dict[str, float | None]:
    """Our sampler, a plain NVML+GPM loop and nvidia-smi dmon over the same window, or (`alone`) one
    after the other, each over its own window (NVML calls of concurrent clients may contend)."""
    import psutil

    from gputriage.backends.host import Host
    from gputriage.backends.nvml import PynvmlBackend
    from gputriage.sampling.sampler import Cadences, Sampler, default_period
    from gputriage.sampling.store import Store
    from gputriage.sampling.windows import Windower

    def start_plain() -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", PLAIN_LOOP, str(seconds)], stdout=subprocess.PIPE, text=True)

    def start_smi() -> subprocess.Popen | None:
        if not shutil.which("nvidia-smi"):
            return None
        return subprocess.Popen(
            ["nvidia-smi", "dmon", "-d", "1", "-s", "pucm"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    def smi_pct(smi: subprocess.Popen | None) -> float | None:
        if smi is None:
            return None
        t = psutil.Process(smi.pid).cpu_times()
        smi.terminate()
        smi.wait()
        return 100.0 * (t.user + t.system) / seconds  # started with the window, ran through it

    nvml = PynvmlBackend(record=False, bounded=False)
    nvml.init()
    folder = Path(tempfile.mkdtemp())
    store = Store(folder / "runs.sqlite")
    workload = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(%f)" % (seconds + 10)])
    run_id = store.begin_run("run", ["sleep"], {})
    plain = smi = None
    if not alone:
        plain, smi = start_plain(), start_smi()
    windows = Windower([0])
    period = period_s or default_period(nvml, [0])
    s = Sampler(
        nvml,
        Host(),
        [0],
        pid=workload.pid,
        cadences=Cadences(gpu_s=period),
        sinks=(windows.add,),
        batch_sinks=(lambda batch: store.add_samples(run_id, batch),),
    )
    p0 = process_cpu_s()
    s.start()
    time.sleep(seconds)
    s.stop()
    process_pct = 100.0 * (process_cpu_s() - p0) / seconds
    workload.kill()
    store.close()
    shutil.rmtree(folder, ignore_errors=True)
    if alone:
        plain = start_plain()
        plain_pct = float(plain.communicate()[0].strip() or "nan")
        smi = start_smi()
        time.sleep(seconds)
        dmon = smi_pct(smi)
    else:
        dmon = smi_pct(smi)
        plain_pct = float(plain.communicate()[0].strip() or "nan")
    return {
        "sampler_thread": 100.0 * s.busy_s / seconds,
        "sampler_process": process_pct,
        "plain": plain_pct,
        "smi": dmon,
        "samples": s.count,
        "alone": alone,
        "period_s": period,
        "parts": {k: 100.0 * v / seconds for k, v in s.cost_s.items()},
    }


def per_call_us(n: int = 300) -> list[tuple[str, float]]:
    """CPU microseconds per call of what the sampler asks NVML, on this thread."""
    from gputriage.backends.nvml import PynvmlBackend
    from gputriage.sampling.gpu_reader import SAMPLED_GPM

    nvml = PynvmlBackend(record=False, bounded=False)
    nvml.init()
    calls = [
        ("nvmlDeviceGetUtilizationRates", ()),
        ("nvmlDeviceGetPowerUsage", ()),
        ("nvmlDeviceGetClockInfo", (1,)),
        ("nvmlDeviceGetCurrentClocksEventReasons", ()),
        ("nvmlDeviceGetTemperature", (0,)),
        ("nvmlDeviceGetMemoryInfo", ()),
        ("nvmlDeviceGetComputeRunningProcesses", ()),
    ]
    out = []
    for fn, args in calls:
        c0 = time.thread_time()
        for _ in range(n):
            nvml.call(fn, 0, *args)
        out.append((fn, 1e6 * (time.thread_time() - c0) / n))
    a, b = nvml.gpm_sample(0), nvml.gpm_sample(0)
    c0 = time.thread_time()
    for _ in range(n):
        b = nvml.gpm_sample(0, into=b)
    out.append(("gpm_sample (refilled buffer)", 1e6 * (time.thread_time() - c0) / n))
    c0 = time.thread_time()
    for _ in range(n):
        nvml.gpm_metrics(0, a, b, SAMPLED_GPM)
    out.append(("gpm_metrics (6 metrics)", 1e6 * (time.thread_time() - c0) / n))
    nvml.gpm_free(a)
    nvml.gpm_free(b)
    return out


def in_situ_us(seconds: float) -> list[tuple[str, float]]:
    """CPU microseconds per reading, each reading alone in a 10 Hz loop for `seconds`."""
    import pynvml

    from gputriage.backends.host import Host
    from gputriage.backends.nvml import PynvmlBackend
    from gputriage.sampling.gpu_reader import SAMPLED_GPM, GpuReader
    from gputriage.sampling.sampler import HostReader, ProcessTreeReader

    nvml = PynvmlBackend(record=False, bounded=False)
    nvml.init()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    gpm = [nvml.gpm_sample(0), nvml.gpm_sample(0)]

    def gpm_both() -> None:
        gpm[0] = nvml.gpm_sample(0, into=gpm[0])
        nvml.gpm_metrics(0, gpm[1], gpm[0], SAMPLED_GPM)
        gpm.reverse()

    workload = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(%f)" % (seconds * 20 + 10)])
    last_ts = [0]

    def buffered_util() -> None:
        try:
            _, got = pynvml.nvmlDeviceGetSamples(h, pynvml.NVML_GPU_UTILIZATION_SAMPLES, last_ts[0])
        except pynvml.NVMLError:  # NOT_FOUND: no new sample since the last one
            return
        if got:
            last_ts[0] = got[-1].timeStamp

    gpu, host, tree = GpuReader(nvml, 0), HostReader(Host()), ProcessTreeReader(workload.pid, nvml, [0])
    readings = [
        ("nothing (the 10 Hz wake-up alone)", lambda: None),
        ("pynvml.nvmlDeviceGetUtilizationRates", lambda: pynvml.nvmlDeviceGetUtilizationRates(h)),
        ("backend call: utilization", lambda: nvml.call("nvmlDeviceGetUtilizationRates", 0)),
        ("backend call: power", lambda: nvml.call("nvmlDeviceGetPowerUsage", 0)),
        ("backend call: SM clock", lambda: nvml.call("nvmlDeviceGetClockInfo", 0, 1)),
        ("backend call: clock-event reasons", lambda: nvml.call("nvmlDeviceGetCurrentClocksEventReasons", 0)),
        ("field values: instant power", lambda: pynvml.nvmlDeviceGetFieldValues(h, [pynvml.NVML_FI_DEV_POWER_INSTANT])),
        ("nvmlDeviceGetSamples: GPU-Util since last", buffered_util),
        ("GPM sample (refilled)", lambda: nvml.gpm_sample(0, into=gpm[0])),
        ("GPM sample + 6 metrics", gpm_both),
        ("GpuReader.read (the sampler's GPU row)", gpu.read),
        ("HostReader.read", host.read),
        ("ProcessTreeReader.read", tree.read),
    ]
    out = []
    for name, fn in readings:
        n, busy = 0, 0.0
        t_end = time.monotonic() + seconds
        while time.monotonic() < t_end:
            c0 = time.thread_time()
            fn()
            busy += time.thread_time() - c0
            n += 1
            time.sleep(0.1)
        out.append((name, 1e6 * busy / max(n, 1)))
    gpu.close()
    workload.kill()
    return out


def native_periods_ms(wait_s: float = 3.0) -> list[tuple[str, float, int]]:
    """The driver's own sampling period of GPU-Util, power and SM clock: median spacing of the
    samples nvmlDeviceGetSamples holds for the last `wait_s` seconds."""
    import pynvml

    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    out = []
    for name, kind in (
        ("GPU-Util", pynvml.NVML_GPU_UTILIZATION_SAMPLES),
        ("power", pynvml.NVML_TOTAL_POWER_SAMPLES),
        ("SM clock", pynvml.NVML_PROCESSOR_CLK_SAMPLES),
    ):
        try:
            try:
                _, first = pynvml.nvmlDeviceGetSamples(h, kind, 0)
            except pynvml.NVMLError_NotFound:
                first = []
            since = first[-1].timeStamp if first else 0
            time.sleep(wait_s)
            _, got = pynvml.nvmlDeviceGetSamples(h, kind, since)
        except pynvml.NVMLError as exc:
            out.append((f"{name} ({exc})", float("nan"), 0))
            continue
        ts = [s.timeStamp for s in got]
        gaps = [(b - a) / 1000 for a, b in zip(ts, ts[1:])]
        out.append((name, statistics.median(gaps) if gaps else float("nan"), len(ts)))
    return out


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
    ap.add_argument("--alone", action="store_true", help="measure the three one after the other, not at once")
    ap.add_argument(
        "--period", type=float, default=None, help="the sampler's GPU period (s); default: what `gputriage run` uses"
    )
    ap.add_argument(
        "--in-situ", type=float, default=0.0, metavar="S", help="also time each reading alone at 10 Hz for S seconds"
    )
    args = ap.parse_args()
    cpu = side_by_side(args.seconds, args.alone, args.period)
    how = "each alone over its own" if cpu["alone"] else "all at once over the same"
    print(
        f"CPU {how} {args.seconds:.0f} s window, % of one core ({os.cpu_count()} cores), {cpu['samples']} samples taken"
    )
    print(f"{'measure':58} {'value':>10}")
    label = f"gputriage sampler thread, GPU at {1 / cpu['period_s']:g} Hz, GPM+host+tree+store"
    print(f"{label:58} {cpu['sampler_thread']:9.2f}%")
    for part, pct in cpu["parts"].items():
        print(f"{'  of which ' + part:58} {pct:9.2f}%")
    print(f"{'gputriage sampling process, whole (all threads)':58} {cpu['sampler_process']:9.2f}%")
    print(f"{'plain Python NVML+GPM loop, 10 Hz':58} {cpu['plain']:9.2f}%")
    if cpu["smi"] is not None:
        print(f"{'nvidia-smi dmon, 1 Hz':58} {cpu['smi']:9.2f}%")
    print(flush=True)
    calls = per_call_us()
    print(f"{'NVML call (CPU per call)':58} {'µs':>10}")
    for name, us in calls:
        print(f"{name:58} {us:10.1f}")
    situ = in_situ_us(args.in_situ) if args.in_situ else []
    periods = []
    if args.in_situ:  # an idle GPU keeps no utilization samples: measure under the bf16 loop
        load = subprocess.Popen([sys.executable, str(TRAIN), "--seconds", "15"], stdout=subprocess.DEVNULL)
        time.sleep(6)
        periods = native_periods_ms()
        load.kill()
    if situ:
        print()
        print(f"{'reading alone at 10 Hz (CPU per reading, in situ)':58} {'µs':>10}")
        for name, us in situ:
            print(f"{name:58} {us:10.1f}")
        print()
        print(f"{'driver sampling period (nvmlDeviceGetSamples)':46} {'ms':>10} {'samples':>8}")
        for name, ms, n in periods:
            print(f"{name:46} {ms:10.1f} {n:8d}")
    rows = []
    for _ in range(args.pairs):
        rows.append((throughput(False, args.loop_seconds), throughput(True, args.loop_seconds)))
    if rows:
        bare = statistics.median(r[0] for r in rows)
        wrapped = statistics.median(r[1] for r in rows)
        print()
        print(f"{'bf16 GEMM loop alone, TFLOP/s (median of pairs)':58} {bare:10.1f}")
        print(f"{'same under gputriage run, TFLOP/s':58} {wrapped:10.1f}")
        print(f"{'slow-down under gputriage run':58} {100 * (1 - wrapped / bare):9.2f}%")
        print("pairs (alone, wrapped):", [(round(a, 1), round(b, 1)) for a, b in rows])


if __name__ == "__main__":
    main()
