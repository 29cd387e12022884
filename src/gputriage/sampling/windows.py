"""Cut a stream of samples into windows (1 s by default) as they arrive, per GPU.

A window keeps medians, maxima and shares of its samples (`model.window.WindowMetrics`), stored
columnar in float32 (NaN where a figure is missing) on one time axis: about 50 bytes per window
for the time and the host, 80 per GPU (7 MB a day per GPU at 1 s windows). Past `capacity`
windows, the windows are merged on a grid twice as coarse (two windows become one, and the window
length doubles: the windows cut after that are cut at the new length), so a run of any length keeps
a bounded series whose every window lasts at most the length it claims.
"""

from __future__ import annotations

import math
from typing import Callable, Iterable

from gputriage.inworkload.stack_categories import LOADER, LOADER_FIELD, SHARE_FIELDS
from gputriage.model.clock_events import POWER_CAP_BIT, THERMAL_OR_HW_BITS
from gputriage.model.numbers import median
from gputriage.model.run import ProcessSummary
from gputriage.model.sample import Sample, StackCounts
from gputriage.model.window import GPU_FIELDS, HOST_FIELDS, WindowMetrics
from gputriage.sampling.idle_streaks import IdleStreaks
from gputriage.sampling.progress import main_shares, others_busy
from gputriage.sampling.window_store import NAN, Store, WindowSeries

WINDOW_S = 1.0
PROCESS_COMPUTES_PCT = 5.0  # a process whose kernels run this share of the time computes on the GPU
MAX_PROCESSES = 64  # processes tallied per run (a job forking CUDA processes without end stays bounded)
CAPACITY = 1 << 17  # windows per GPU before pairs are merged: 36 h at 1 s
STACK_SNAPSHOTS = 512  # the stack sampler's top lines kept over a run (every other one dropped beyond)
FIELDS = GPU_FIELDS + HOST_FIELDS


def _med(values: list[float]) -> float:
    return median(values) if values else NAN


def _max(values: list[float]) -> float:
    return max(values) if values else NAN


def _computes(sm_util_pct: float | None) -> bool:
    return sm_util_pct is None or sm_util_pct >= PROCESS_COMPUTES_PCT


def gpu_values(bucket: list[Sample], gpu: int) -> dict[str, float]:
    """A GPU's figures over one window's samples."""
    rows = [g for g in (s.gpu(gpu) for s in bucket) if g is not None]
    out: dict[str, float] = {}

    def put(name: str, values: Iterable[float | int | None], how: Callable[[list[float]], float] = _med) -> None:
        xs = [float(v) for v in values if v is not None]
        if xs:
            out[name] = how(xs)

    put("util_pct", (r.util_pct for r in rows))
    put("util_max_pct", (r.util_pct for r in rows), _max)
    put("mem_util_pct", (r.mem_util_pct for r in rows))
    put("sm_active_pct", (r.sm_active_pct for r in rows))
    put("sm_active_max_pct", (r.sm_active_pct for r in rows), _max)
    put("sm_occupancy_pct", (r.sm_occupancy_pct for r in rows))
    put("tensor_active_pct", (r.tensor_active_pct for r in rows))
    put("dram_active_pct", (r.dram_active_pct for r in rows))
    put(
        "cuda_math_active_pct",
        (
            max(pipes)
            for r in rows
            if (pipes := [p for p in (r.fp64_active_pct, r.fp32_active_pct, r.fp16_active_pct) if p is not None])
        ),
    )
    put("pcie_rx_mib_per_s", (r.pcie_rx_mib_per_s for r in rows))
    put("pcie_tx_mib_per_s", (r.pcie_tx_mib_per_s for r in rows))
    put("nvlink_tx_mib_per_s", (r.nvlink_tx_mib_per_s for r in rows))
    put("nvlink_rx_mib_per_s", (r.nvlink_rx_mib_per_s for r in rows))
    put("power_w", (r.power_mw / 1000 for r in rows if r.power_mw is not None))
    put("power_max_w", (r.power_mw / 1000 for r in rows if r.power_mw is not None), _max)
    put("sm_clock_mhz", (r.sm_clock_mhz for r in rows))
    put("temperature_c", (r.temperature_c for r in rows))
    put("temperature_max_c", (r.temperature_c for r in rows), _max)
    put("used_bytes", (r.used_bytes for r in rows))
    put("used_max_bytes", (r.used_bytes for r in rows), _max)
    reasons = [r.clock_event_reasons for r in rows if r.clock_event_reasons is not None]
    if reasons:
        out["throttled_share"] = sum(1 for x in reasons if x & THERMAL_OR_HW_BITS) / len(reasons)
        out["power_capped_share"] = sum(1 for x in reasons if x & POWER_CAP_BIT) / len(reasons)
    # other processes that share the GPU's time: those whose kernels run, or whose use NVML did not say; one that
    # only holds memory (20 GiB left idle beside a job, recorded on an H200) takes none of it
    out["neighbours"] = float(
        max((sum(1 for n in s.neighbours if n.gpu == gpu and _computes(n.sm_util_pct)) for s in bucket), default=0)
    )
    known = [[p.sm_util_pct for p in s.job_processes if p.gpu == gpu and p.sm_util_pct is not None] for s in bucket]
    if any(known):
        out["job_computing"] = float(max(sum(1 for u in us if u >= PROCESS_COMPUTES_PCT) for us in known))
    return out


def _allocator_rates(bucket: list[Sample], before: Sample | None) -> dict[str, float]:
    """cudaFree calls and retried allocations per second, from the workload's cumulative counters at the
    previous window's last sample (when there is one) to this window's last."""
    points = [
        s
        for s in ([before] if before is not None else []) + bucket
        if s.workload is not None and s.workload.cuda_frees_total is not None
    ]
    if len(points) < 2 or points[-1].t_s <= points[0].t_s:
        return {}
    a, b = points[0].workload, points[-1].workload
    assert a is not None and b is not None
    dt = points[-1].t_s - points[0].t_s
    return {
        "cuda_frees_per_s": ((b.cuda_frees_total or 0.0) - (a.cuda_frees_total or 0.0)) / dt,
        "alloc_retries_per_s": ((b.alloc_retries_total or 0.0) - (a.alloc_retries_total or 0.0)) / dt,
    }


def _stack_shares(bucket: list[Sample], before: Sample | None) -> dict[str, float]:
    """The main thread's share of the window in each of the stack sampler's categories, from the counts at the
    previous window's last sample (when there is one) to this window's last."""
    points = [
        s.workload.stacks
        for s in ([before] if before is not None else []) + bucket
        if s.workload is not None and s.workload.stacks is not None
    ]
    if len(points) < 2:
        return {}
    a, b = points[0], points[-1]
    ticks = b.ticks - a.ticks
    main = {k: v - a.main.get(k, 0.0) for k, v in b.main.items()}
    every = {k: v - a.all.get(k, 0.0) for k, v in b.all.items()}
    if ticks <= 0 or min(main.values(), default=0.0) < 0:  # nothing new, or the processes read changed
        return {}
    cpu = b.main_cpu_s - a.main_cpu_s if b.main_cpu_s is not None and a.main_cpu_s is not None else None
    shares = main_shares(main, ticks, cpu, b.wall_s - a.wall_s)
    if not shares:
        return {}
    out = {field: shares[c] for c, field in SHARE_FIELDS.items()}
    out[LOADER_FIELD] = shares[LOADER]
    out["host_stack_samples"] = ticks
    busy = others_busy(main, every, ticks)
    if busy is not None:
        out["host_others_busy"] = busy
    return out


def host_values(bucket: list[Sample], before: Sample | None = None) -> dict[str, float]:
    """The host's and the workload's figures over one window's samples; `before`, the previous window's
    last sample, for the rates of cumulative counters."""
    out: dict[str, float] = {}
    hosts = [s.host for s in bucket if s.host is not None]
    work = [s.workload for s in bucket if s.workload is not None]

    def put(name: str, values: Iterable[float | int | None], how: Callable[[list[float]], float] = _med) -> None:
        xs = [float(v) for v in values if v is not None]
        if xs:
            out[name] = how(xs)

    put("max_core_pct", (max(h.cpu_busy_pct) if h.cpu_busy_pct else None for h in hosts))
    put("iowait_pct", (h.iowait_pct for h in hosts))
    put("swap_in_pages_per_s", (h.swap_in_pages_per_s for h in hosts))
    put("swap_in_max_pages_per_s", (h.swap_in_pages_per_s for h in hosts), _max)
    put("workload_cpu_pct", (w.cpu_pct for w in work))
    put("gpu_process_cpu_pct", (w.gpu_process_cpu_pct for w in work))
    put("read_mb_per_s", (w.rchar_bytes_per_s / 1e6 if w.rchar_bytes_per_s is not None else None for w in work))
    put("write_mb_per_s", (w.write_bytes_per_s / 1e6 if w.write_bytes_per_s is not None else None for w in work))
    put("top_thread_pct", (w.top_thread_pct for w in work))
    put("gpu_main_thread_pct", (w.gpu_main_thread_pct for w in work))
    put("workload_vram_max_bytes", (w.vram_bytes for w in work), _max)
    put("workload_rss_max_bytes", (w.rss_bytes for w in work), _max)
    put("loader_workers", (w.loader_workers for w in work), _max)
    put("loader_cpu_pct", (w.loader_cpu_pct for w in work))
    put("loader_worker_cpu_pct", (w.loader_worker_cpu_pct for w in work))
    put("workload_cores", (w.cores_usable for w in work), min)
    put("mem_available_min_bytes", (h.mem_available_bytes for h in hosts), min)
    put("steps_total", (w.steps_total for w in work), _max)
    put("samples_total", (w.samples_total for w in work), _max)
    put("tokens_total", (w.tokens_total for w in work), _max)
    put("ooms_total", (w.ooms_total for w in work), _max)
    put("oom_requested_bytes", (w.oom_requested_bytes for w in work), _max)
    put("allocator_reserved_bytes", (w.allocator_reserved_bytes for w in work))
    put("allocator_allocated_bytes", (w.allocator_allocated_bytes for w in work))
    out.update(_allocator_rates(bucket, before))
    out.update(_stack_shares(bucket, before))
    # float32 columns: a time as seconds after the window's start (unix seconds would lose minutes)
    put(
        "progress_dt_s",
        (s.t_s - bucket[0].t_s for s in bucket if s.workload is not None and s.workload.steps_total is not None),
        _max,
    )
    if any(s.job_processes for s in bucket):
        out["job_gpu_processes"] = float(max(len({p.pid for p in s.job_processes}) for s in bucket))
        out["job_gpus"] = float(max(len({p.gpu for p in s.job_processes}) for s in bucket))
    return out


def metrics_of(bucket: list[Sample], gpu: int) -> WindowMetrics:
    """One window's figures from its samples (also for a live view of the last second)."""
    values = gpu_values(bucket, gpu) | host_values(bucket)
    return WindowMetrics(t0_s=bucket[0].t_s, t1_s=bucket[-1].t_s, samples=len(bucket), **values)


class Windower:
    """Feeds the windows as samples arrive; windows end at fixed edges from the first sample."""

    def __init__(self, gpus: list[int], window_s: float = WINDOW_S, capacity: int = CAPACITY) -> None:
        self.store = Store(gpus, window_s, capacity)
        self.base_s = window_s  # the length windows are cut at before any compaction
        self.series = {g: WindowSeries(self.store, g) for g in gpus}
        self.host = WindowSeries(self.store, None)  # the host's and workload's figures, GPUs or not
        self.first_t: float | None = None
        self.last_t: float | None = None
        self.count = 0
        self._bucket: list[Sample] = []
        self._before: Sample | None = None  # the last sample of the window closed last
        self._edge = 0.0
        # (gpu, pid, job) -> [samples, samples with utilization, its sum, samples computing, most memory]
        self._processes: dict[tuple[int, int, bool], list[float]] = {}
        self._idle = IdleStreaks()  # each process's longest stretch holding memory with no kernel
        self._stacks: list[tuple[float, StackCounts]] = []  # (unix s, counts with the top lines), oldest first

    @property
    def window_s(self) -> float:
        """The windows' length: the store's, which doubles at each compaction."""
        return self.store.window_s

    def add(self, s: Sample) -> None:
        if self.first_t is None:
            self.first_t, self._edge = s.t_s, s.t_s + self.window_s
        if s.t_s < self.first_t:
            return
        self.count += 1
        self.last_t = s.t_s
        if s.t_s >= self._edge and self._bucket:
            # a window ends at its edge: after a gap in the samples it does not stretch over the gap
            self._close(min(s.t_s, self._edge))
            while self._edge <= s.t_s:
                self._edge += self.window_s
        self._bucket.append(s)
        self._tally(s)
        if s.workload is not None and s.workload.stacks is not None and s.workload.stacks.lines is not None:
            self._stacks.append((s.t_s, s.workload.stacks))
            if len(self._stacks) > STACK_SNAPSHOTS:  # thinned, the first and the newest kept
                self._stacks = self._stacks[:-1:2] + self._stacks[-1:]

    def stack_snapshots(self) -> list[tuple[float, StackCounts]]:
        """The stack sampler's counts with its top lines, as samples carried them (unix s, counts), oldest first."""
        return list(self._stacks)

    def _tally(self, s: Sample) -> None:
        for job, procs in ((True, s.job_processes), (False, s.neighbours)):
            for p in procs:
                key = (p.gpu, p.pid, job)
                t = self._processes.get(key)
                if t is None:
                    if len(self._processes) >= MAX_PROCESSES:
                        continue
                    t = self._processes[key] = [0, 0, 0.0, 0, -1]
                t[0] += 1
                if p.sm_util_pct is not None:
                    t[1] += 1
                    t[2] += p.sm_util_pct
                    t[3] += p.sm_util_pct >= PROCESS_COMPUTES_PCT
                if p.used_bytes is not None:
                    t[4] = max(t[4], p.used_bytes)
                self._idle.add(key, s.t_s, p.used_bytes, p.sm_util_pct)

    def processes(self) -> list[ProcessSummary]:
        """Every process seen on a sampled GPU, the workload's first, then by GPU and pid."""
        return [
            ProcessSummary(
                gpu=gpu,
                pid=pid,
                job=job,
                samples=int(t[0]),
                used_max_bytes=int(t[4]) if t[4] >= 0 else None,
                sm_util_mean_pct=round(t[2] / t[1], 1) if t[1] else None,
                computing_share=round(t[3] / t[1], 2) if t[1] else None,
                **self._idle.fields((gpu, pid, job)),
            )
            for (gpu, pid, job), t in sorted(self._processes.items(), key=lambda kv: (not kv[0][2], kv[0][:2]))
        ]

    def _close(self, t1: float) -> None:
        bucket, self._bucket = self._bucket, []
        window_s = self.window_s
        self.store.append(
            bucket[0].t_s,
            t1,
            len(bucket),
            host_values(bucket, self._before),
            {g: gpu_values(bucket, g) for g in self.series},
        )
        self._before = bucket[-1]
        if self.window_s != window_s and self.first_t is not None:
            # compacted: the next window ends on the coarser grid (at the edge of the slot this one ended in)
            k = (self._edge - self.first_t) / self.window_s
            self._edge = self.first_t + (round(k) if abs(k - round(k)) < 1e-6 else math.ceil(k)) * self.window_s

    def close(self) -> None:
        """The last, partial window counts when it covers at least half a window (of the length windows are
        cut at before any compaction: a long run keeps its last seconds)."""
        b = self._bucket
        if len(b) >= 2 and b[-1].t_s - b[0].t_s >= 0.4 * self.base_s:
            self._close(b[-1].t_s)
        self._bucket = []
