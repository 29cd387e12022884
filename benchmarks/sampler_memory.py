"""The sampler's memory over a long run, without a GPU: a day of samples at 10 Hz (one GPU with
GPM, a 64-core host, a workload) fed to the windows and the ring as the sampler feeds them, with
the memory they hold measured (tracemalloc) every simulated hour.

    python benchmarks/sampler_memory.py [--hours 24] [--period 0.1] [--gpus 1]
"""

from __future__ import annotations

import argparse
import collections
import random
import time
import tracemalloc

from gputriage.model.sample import GpuSample, HostSample, Neighbour, Sample, WorkloadSample
from gputriage.sampling.sampler import Cadences
from gputriage.sampling.windows import Windower


def sample(t: float, gpus: int, host: HostSample, work: WorkloadSample, rng: random.Random) -> Sample:
    rows = [
        GpuSample(
            index=i,
            util_pct=rng.choice((99.0, 100.0)),
            mem_util_pct=40.0,
            power_mw=690_000 + i,
            sm_clock_mhz=1980,
            clock_event_reasons=4,
            used_bytes=80 << 30,
            temperature_c=60.0,
            sm_active_pct=rng.uniform(85, 95),
            sm_occupancy_pct=14.0,
            tensor_active_pct=88.0,
            dram_active_pct=17.0,
            pcie_tx_mib_per_s=50.0,
            pcie_rx_mib_per_s=80.0,
        )
        for i in range(gpus)
    ]
    return Sample(t_s=t, gpus=rows, host=host, workload=work, neighbours=[Neighbour(gpu=0, pid=1, used_bytes=1)])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--period", type=float, default=0.1)
    ap.add_argument("--gpus", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(0)
    cad = Cadences(gpu_s=args.period)
    tracemalloc.start()
    windows = Windower(list(range(args.gpus)))
    ring: collections.deque[Sample] = collections.deque(maxlen=cad.every(cad.ring_s))
    t0, n = time.time(), int(args.hours * 3600 / args.period)
    host_every = cad.every(cad.host_s)
    host = HostSample(cpu_busy_pct=[rng.uniform(0, 100) for _ in range(64)], iowait_pct=0.5)
    work = WorkloadSample(pids=9, cpu_pct=105.0, top_thread_pct=99.0, rss_bytes=8 << 30, rchar_bytes_per_s=1e6)
    print(f"{'hours':>6} {'samples':>10} {'windows':>8} {'held MB':>8} {'peak MB':>8}")
    wall = time.perf_counter()
    for k in range(n):
        if k % host_every == 0:  # the host and workload are read once a second, carried in between
            host = HostSample(cpu_busy_pct=[rng.uniform(0, 100) for _ in range(64)], iowait_pct=0.5)
            work = WorkloadSample(pids=9, cpu_pct=105.0, top_thread_pct=99.0, rss_bytes=8 << 30, rchar_bytes_per_s=1e6)
        s = sample(t0 + k * args.period, args.gpus, host, work, rng)
        windows.add(s)
        ring.append(s)
        if (k + 1) % int(3600 / args.period) == 0:
            held, peak = tracemalloc.get_traced_memory()
            print(
                f"{(k + 1) * args.period / 3600:6.0f} {k + 1:10d} {len(windows.series[0]):8d} {held / 1e6:8.1f} "
                f"{peak / 1e6:8.1f}",
                flush=True,
            )
    windows.close()
    held, peak = tracemalloc.get_traced_memory()
    series_mb = windows.store.memory_bytes() / 1e6
    print(
        f"after {args.hours:g} h at {1 / args.period:g} Hz: {held / 1e6:.1f} MB held ({series_mb:.1f} MB of "
        f"windows, a ring of {len(ring)} samples), peak {peak / 1e6:.1f} MB; {time.perf_counter() - wall:.0f} s"
    )


if __name__ == "__main__":
    main()
