"""Where the profiled window's time went: GPU busy split by kind, GPU idle split by its host cause.

The window is the profiler steps where they are marked; else it runs from the first CUDA call (what
comes before it is the profiler starting, not the workload), less a first step far slower than the
rest (profiler warm-up) and work queued before the profiler started.

Busy time is the union of GPU activities (kernels, copies, memsets) on a device; where streams
overlap, time goes to the activity that started first. Each idle gap is attributed by what the
host was doing:
- sync: the host had been blocked in a synchronizing call (cudaStreamSynchronize,
  cudaDeviceSynchronize, cudaEventSynchronize, blocking cudaMemcpy — what `.item()` and `.cpu()`
  do) that returned at the start of the gap: the queue had drained, so the GPU waits for the host
  to issue work again. Counted per call and attributed to the framework op that made it.
- launch: the next activity's launch call was already running when the gap began, or the gap is
  short (< 500 µs) and the launching thread spent it inside framework ops: the host cannot issue
  kernels as fast as the GPU runs them.
- host_in_ops: a longer gap the launching thread spent inside framework ops that launched nothing:
  CPU-side tensor work (preprocessing with torch on the CPU), lazy initialization.
- host_after_read: a longer gap that began as a copy to the host ended, the launching thread
  spending it outside framework ops: the host computes on a result it read back (numpy statistics
  on an activation, Python on a tensor's values). Attributed to the op that read it.
- host_outside_ops: the launching thread spent the gap outside any framework op — Python, data
  loading, preprocessing, sleeping.
host_in_ops gaps are attributed to the optimizer step they fall in (an optimizer on CPU tensors), else
to the outermost framework op covering the gap's middle.
- allocator: the host had been in cudaMalloc/cudaFree (which synchronize the device) as the gap
  began — the caching allocator is releasing and re-acquiring memory, typical near full VRAM.
- unattributed: no launch record links the next activity to a host thread.

Communication (NCCL) counts as busy only where no computation runs beside it: the exposed part, what
adds to step time; overlapped collectives cost nothing.

Busy time in kernels launched with blocks for fewer than half the GPU's SMs ("blocks per SM" < 0.5
in the trace) is also summed: the GPU is busy by nvidia-smi while most SMs have nothing to run
(a grid of 128 blocks on 132 SMs leaves 4 idle: not underfilled). Communication kernels use few
blocks by design and are never underfilled.
"""

from __future__ import annotations

import bisect

from gputriage.model.numbers import median
from gputriage.model.trace import Anatomy, HostWork, StepRow, SyncOp, Syncs, TimeShare
from gputriage.trace import kernel_kinds as kk
from gputriage.trace.load import KERNEL, MEMCPY, Columns
from gputriage.trace.thread_ops import ThreadOps, thread_ops

UNDERFILLED_BLOCKS_PER_SM = 0.5  # below: the kernel's blocks leave most SMs without work
QUEUED_US = 1000.0  # a first kernel that starts this long after its launch waited behind earlier work

SYNC_CALLS = {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
              "cudaMemcpy2D", "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize", "cuMemcpyDtoH_v2",
              "cudaStreamQuery_blocking"}
LAUNCH_COVERAGE = 0.5  # share of a gap the launching thread must spend in framework ops to call it launch-bound
LAUNCH_GAP_MAX_US = 500.0  # longer gaps inside framework ops are host-side work, not launch overhead
SYNC_TOLERANCE_US = 5.0
ALLOC_CALLS = {"cudaMalloc", "cudaFree", "cudaMallocAsync", "cudaFreeAsync", "cuMemAlloc_v2", "cuMemFree_v2"}
IDLE_KINDS = ("launch", "sync", "allocator", "host_in_ops", "host_after_read", "host_outside_ops", "unattributed")
READ_BACK = frozenset({kk.D2H_PAGEABLE, kk.D2H_PINNED})


def gpu_kinds(cols: Columns) -> list[str]:
    """The kind of every GPU activity (kernel kinds use the launching op's dtype)."""
    op_of_ext, o_dtype = cols.op_of_ext(), cols.o_dtype
    cache: dict[tuple[int, int, int], str] = {}
    out = []
    for name, kind, ext in zip(cols.g_name, cols.g_kind, cols.g_ext):
        op = op_of_ext.get(ext)
        dtype = o_dtype[op] if op is not None else -1
        key = (name, kind, dtype)
        k = cache.get(key)
        if k is None:
            text = cols.names[name]
            if kind == KERNEL:
                k = kk.kind_of_kernel(text, cols.names[dtype] if dtype >= 0 else "")
            elif kind == MEMCPY:
                k = kk.kind_of_memcpy(text)
            else:
                k = kk.MEMSET
            cache[key] = k
        out.append(k)
    return out


def _anatomy(device: int, window_us: float, busy_us: dict[str, float], idle_us: dict[str, float], syncs: Syncs,
             gaps: list[float], durations: list[float], steps: list[StepRow], underfilled_us: float,
             warmup_skipped_us: float, queued_skipped_us: float, startup_skipped_us: float,
             host_work: dict[tuple[str, str], list[float]]) -> Anatomy:
    w = window_us or 1.0
    work = sorted((HostWork(op=op, where=where, gaps=int(v[0]), gpu_idle_us=round(v[1], 1))
                   for (op, where), v in host_work.items()), key=lambda h: -h.gpu_idle_us)
    busy_total, idle_total = sum(busy_us.values()), sum(idle_us.values())
    return Anatomy(
        device=device, window_us=round(window_us, 1), busy_us=round(busy_total, 1), idle_us=round(idle_total, 1),
        busy_pct=round(100 * busy_total / w, 1),
        busy={k: TimeShare(round(v, 1), round(100 * v / w, 1)) for k, v in busy_us.items() if v > 0},
        idle={k: TimeShare(round(v, 1), round(100 * v / w, 1)) for k, v in idle_us.items() if v > 0},
        syncs=syncs, gaps=len(gaps), kernels=len(durations), median_kernel_us=round(_median(durations), 2),
        median_gap_us=round(_median(gaps), 2), host_work=work[:10], warmup_skipped_us=round(warmup_skipped_us, 1),
        queued_skipped_us=round(queued_skipped_us, 1), startup_skipped_us=round(startup_skipped_us, 1),
        underfilled_us=round(underfilled_us, 1),
        underfilled_busy_pct=round(100 * underfilled_us / busy_total, 1) if busy_total else 0.0, steps=steps)


def _median(xs: list[float]) -> float:
    return median(xs) if xs else 0.0


def _exposed_communication(cols: Columns, kinds: list[str], idx: list[int], lo: float,
                           busy_total_us: float) -> tuple[dict[str, float], float]:
    """Busy time by kind, and underfilled time, with computation taking precedence over communication:
    a collective that runs while a kernel computes on another stream costs nothing (NCCL kernels use
    few blocks by design: they are not underfilled kernels either)."""
    busy = dict.fromkeys(kk.BUSY_KINDS, 0.0)
    underfilled = 0.0
    cursor = lo
    for i in idx:
        if kinds[i] == kk.COMM:
            continue
        s, e = max(cols.g_ts[i], lo), cols.g_ts[i] + cols.g_dur[i]
        if e > cursor:
            add = e - max(s, cursor)
            busy[kinds[i]] += add
            if 0 <= cols.g_bpsm[i] < UNDERFILLED_BLOCKS_PER_SM:
                underfilled += add
            cursor = e
    busy[kk.COMM] = max(0.0, busy_total_us - sum(busy.values()))
    return busy, underfilled


def analyze(cols: Columns, kinds: list[str] | None = None) -> list[Anatomy]:
    kinds = kinds if kinds is not None else gpu_kinds(cols)
    ops = thread_ops(cols)
    corr_to_rt: dict[int, int] = {}
    for i, c in enumerate(cols.r_corr):
        if c >= 0:
            corr_to_rt[c] = i
    blocking = SYNC_CALLS | ALLOC_CALLS
    sync_idx = [i for i, n in enumerate(cols.r_name) if cols.names[n] in blocking]
    sync_idx.sort(key=lambda i: cols.r_ts[i] + cols.r_dur[i])
    sync_ends = [cols.r_ts[i] + cols.r_dur[i] for i in sync_idx]
    devices = sorted(set(cols.g_dev))
    host_start = min(min(cols.o_ts, default=float("inf")), min(cols.r_ts, default=float("inf")))
    host_start = 0.0 if host_start == float("inf") else host_start  # the first host event
    # without step markers the window starts at the first CUDA call: before it, the profiler was starting
    # (CUPTI attaches on the first CUDA call, 2-3 ms on recorded H200 windows), not the workload idling
    first_call = min(cols.r_ts, default=host_start)
    skipped = 0.0  # a first step left out as profiler warm-up
    step_lo: float | None = None
    step_hi: float | None = None
    if cols.steps:
        step_lo = min(s[1] for s in cols.steps)
        step_hi = max(s[1] + s[2] for s in cols.steps)
    else:
        warm_end = profiler_warmup_end(cols, host_start)
        if warm_end is not None:
            step_lo, skipped = warm_end, warm_end - host_start
    out = []
    for dev in devices:
        idx = [i for i, d in enumerate(cols.g_dev) if d == dev]
        idx.sort(key=lambda i: cols.g_ts[i])
        if not idx:
            continue
        first_gpu = cols.g_ts[idx[0]]
        last_gpu = max(cols.g_ts[i] + cols.g_dur[i] for i in idx)
        lo = step_lo if step_lo is not None else min(first_gpu, max(host_start, first_call))
        startup = max(0.0, lo - host_start) if step_lo is None else 0.0
        queued = 0.0
        rt = corr_to_rt.get(cols.g_corr[idx[0]])
        if step_lo is None and rt is not None and first_gpu - cols.r_ts[rt] > QUEUED_US:
            # the first recorded kernel waited in the queue behind work launched before the profiler
            # started (unrecorded): the GPU was busy, not idle, until it began
            queued, lo = first_gpu - lo, first_gpu
        hi = max(step_hi, last_gpu) if step_hi is not None else last_gpu
        if step_lo is not None:
            idx = [i for i in idx if cols.g_ts[i] + cols.g_dur[i] >= lo]
            hi = max([hi] + [cols.g_ts[i] + cols.g_dur[i] for i in idx[-1:]])
        if cols.truncated:  # judge only the span where every launch still has its GPU activity
            hi = max(lo, min(hi, last_gpu, complete_until(cols)))
            idx = [i for i in idx if cols.g_ts[i] < hi]
        busy = dict.fromkeys(kk.BUSY_KINDS, 0.0)
        idle = dict.fromkeys(IDLE_KINDS, 0.0)
        sync_by_op: dict[str, dict[str, float]] = {}
        host_work: dict[tuple[str, str], list[float]] = {}
        gaps: list[float] = []
        prev = -1
        underfilled = 0.0
        cursor = lo
        durations = []
        for i in idx:
            s, e = cols.g_ts[i], cols.g_ts[i] + cols.g_dur[i]
            s_clip = max(s, lo)
            if s_clip > cursor:
                gap = s_clip - cursor
                gaps.append(gap)
                cause, op = _gap_cause(cols, ops, corr_to_rt, sync_idx, sync_ends, cursor, s_clip, i,
                                       kinds[prev] in READ_BACK if prev >= 0 else False)
                if cause == "host_after_read":
                    op = _launching_op(cols, ops, corr_to_rt, prev)
                idle[cause] += gap
                if cause == "sync" and op is not None:
                    entry = sync_by_op.setdefault(op, {"gpu_idle_after_us": 0.0, "gaps": 0})
                    entry["gpu_idle_after_us"] += gap
                    entry["gaps"] += 1
                elif cause in ("host_in_ops", "host_after_read"):
                    tally = host_work.setdefault((op or "?", cause[5:]), [0, 0.0])
                    tally[0] += 1
                    tally[1] += gap
            if e > cursor:
                add = e - max(s_clip, cursor)
                busy[kinds[i]] += add
                if kinds[i] != kk.COMM and 0 <= cols.g_bpsm[i] < UNDERFILLED_BLOCKS_PER_SM:
                    underfilled += add
                cursor = e
            if cols.g_kind[i] == KERNEL:
                durations.append(cols.g_dur[i])
            prev = i
        if busy[kk.COMM]:  # communication counts only where no computation overlaps it
            busy, underfilled = _exposed_communication(cols, kinds, idx, lo, sum(busy.values()))
        if hi > cursor:  # trailing idle: the host did not issue more work
            idle["host_outside_ops"] += hi - cursor
        syncs = _sync_summary(cols, ops, sync_idx, lo, hi, sync_by_op)
        steps = _steps(cols, idx, kinds, until=hi if cols.truncated else None) if cols.steps else []
        out.append(_anatomy(dev, hi - lo, busy, idle, syncs, gaps, durations, steps, underfilled, skipped, queued,
                            startup, host_work))
    return out


def complete_until(cols: Columns) -> float:
    """In a truncated trace, where the GPU's record starts to have holes: the first framework op of a kind
    that launches GPU work (nearly always, elsewhere in the file) whose GPU work is missing. Kineto writes
    the host's ops first and the GPU's activities in blocks, so a cut can remove activities from anywhere
    in the window, while the ops that launched them are all there."""
    launched = set(cols.g_ext)
    seen: dict[int, list[int]] = {}
    for i, (name, ext) in enumerate(zip(cols.o_name, cols.o_ext)):
        if ext >= 0:
            seen.setdefault(name, []).append(i)
    first = float("inf")
    for idx in seen.values():
        lost = [i for i in idx if cols.o_ext[i] not in launched]
        if len(idx) - len(lost) >= LAUNCHING_SHARE * len(idx) and lost:  # a kind that launches, some of it lost
            first = min(first, min(cols.o_ts[i] for i in lost))
    return first


LAUNCHING_SHARE = 0.5  # of an op's instances with GPU work, for the op to be one that launches it
WARMUP_STEP_RATIO = 3.0


def profiler_warmup_end(cols: Columns, host_start: float) -> float | None:
    """Where a training loop's first profiled step ends, when that step ran far slower than the rest
    (CUDA lazy loading and CUPTI instrumenting each kernel's first launch: profiler warm-up, not the
    workload). Steps are delimited by optimizer steps; None when fewer than 3 or no outlier."""
    ends = sorted(ts + dur for ts, dur, _ in cols.optimizer_steps)
    if len(ends) < 3:
        return None
    first = ends[0] - host_start
    rest = [b - a for a, b in zip(ends, ends[1:])]
    return ends[0] if first > WARMUP_STEP_RATIO * _median(rest) else None


def _gap_cause(cols: Columns, ops: dict[int, ThreadOps], corr_to_rt: dict[int, int], sync_idx: list[int],
               sync_ends: list[float], a: float, b: float, next_gpu: int,
               after_read: bool = False) -> tuple[str, str | None]:
    """The idle gap [a, b]'s cause (module doc), and the op it is attributed to. `after_read`: the GPU's last
    activity before the gap was a copy to the host."""
    # a sync that returned as the gap began (the queue had drained while the host waited)
    j = bisect.bisect_left(sync_ends, a - SYNC_TOLERANCE_US)
    while j < len(sync_ends) and sync_ends[j] <= b:
        r = sync_idx[j]
        if cols.r_ts[r] < a:
            call = cols.names[cols.r_name[r]]
            if call in ALLOC_CALLS:
                return "allocator", call
            t = ops.get(cols.r_tid[r])
            op = t.outermost(cols.r_ts[r]) if t else None
            return "sync", cols.names[op] if op is not None else call
        j += 1
    rt = corr_to_rt.get(cols.g_corr[next_gpu])
    if rt is None:
        return "unattributed", None
    launch_start = cols.r_ts[rt]
    if launch_start <= a:
        return "launch", None  # the launch call was still running when the GPU ran dry
    t = ops.get(cols.r_tid[rt])
    late = min(launch_start, b) - a
    covered = t.coverage(a, a + late) if t else 0.0
    if late > 0 and covered / late >= LAUNCH_COVERAGE:
        if b - a < LAUNCH_GAP_MAX_US:
            return "launch", None
        return "host_in_ops", _computing_op(cols, t, (a + min(launch_start, b)) / 2)
    if after_read and b - a >= LAUNCH_GAP_MAX_US:
        return "host_after_read", None
    return "host_outside_ops", None


def _computing_op(cols: Columns, t: ThreadOps | None, mid: float) -> str | None:
    """The optimizer step a host computation falls in, else the outermost framework op covering it."""
    for ts, dur, name in cols.optimizer_steps:
        if ts <= mid <= ts + dur:
            return name
    op = t.outermost(mid) if t else None
    return cols.names[op] if op is not None else None


def _launching_op(cols: Columns, ops: dict[int, ThreadOps], corr_to_rt: dict[int, int], gpu: int) -> str | None:
    """The outermost framework op that launched a GPU activity (the one that read a result back)."""
    rt = corr_to_rt.get(cols.g_corr[gpu])
    if rt is None:
        return None
    t = ops.get(cols.r_tid[rt])
    op = t.outermost(cols.r_ts[rt]) if t else None
    return cols.names[op] if op is not None else cols.names[cols.r_name[rt]]


def _sync_summary(cols: Columns, ops: dict[int, ThreadOps], sync_idx: list[int], lo: float, hi: float,
                  by_op_idle: dict[str, dict[str, float]]) -> Syncs:
    count, blocked = 0, 0.0
    by_op: dict[str, dict[str, float]] = {}
    for r in sync_idx:
        s = cols.r_ts[r]
        if s < lo or s > hi or cols.names[cols.r_name[r]] in ALLOC_CALLS:
            continue
        count += 1
        blocked += cols.r_dur[r]
        t = ops.get(cols.r_tid[r])
        op = t.outermost(s) if t else None
        key = cols.names[op] if op is not None else cols.names[cols.r_name[r]]
        entry = by_op.setdefault(key, {"calls": 0, "host_blocked_us": 0.0})
        entry["calls"] += 1
        entry["host_blocked_us"] += cols.r_dur[r]
    rows = [SyncOp(op=key, calls=int(v["calls"]), host_blocked_us=round(v["host_blocked_us"], 1),
                   gpu_idle_after_us=round(by_op_idle.get(key, {}).get("gpu_idle_after_us", 0.0), 1))
            for key, v in by_op.items()]
    rows.sort(key=lambda r: (-r.gpu_idle_after_us, -r.calls))
    return Syncs(count=count, host_blocked_us=round(blocked, 1), by_op=rows[:10])


def _steps(cols: Columns, idx: list[int], kinds: list[str], until: float | None = None) -> list[StepRow]:
    """Each profiler step's GPU busy share; `until`: steps that end after it (a truncated trace's) left out."""
    out = []
    starts = [cols.g_ts[i] for i in idx]
    for name, s, d in sorted(cols.steps, key=lambda x: x[1]):
        e = s + d
        if until is not None and e > until:
            continue
        lo = bisect.bisect_left(starts, s)
        hi = bisect.bisect_left(starts, e)
        busy = 0.0
        cursor = s
        by_kind: dict[str, float] = {}
        for i in idx[max(0, lo - 1): hi]:
            a, b = max(cols.g_ts[i], s), min(cols.g_ts[i] + cols.g_dur[i], e)
            if b > cursor and b > a:
                add = b - max(a, cursor)
                busy += add
                by_kind[kinds[i]] = by_kind.get(kinds[i], 0.0) + add
                cursor = b
        top = max(by_kind, key=lambda k: by_kind[k]) if by_kind else None
        out.append(StepRow(step=str(name), dur_us=round(d, 1), gpu_busy_pct=round(100 * busy / d, 1) if d else 0.0,
                           top_kind=top))
    return out
