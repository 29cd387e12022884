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
- host_loading: in the DataLoader (its own events); host_loop: outside ops and the loader, which the window
  shows elsewhere: the loop's own host work (`trace.loading`; a short such gap is launch);
- host_outside_ops: outside any framework op, in a window with no loader event: input or not, unseen.
host_in_ops gaps are attributed to the optimizer step they fall in (an optimizer on CPU tensors), else
to the outermost framework op covering the gap's middle.
- allocator: the host had been in cudaMalloc/cudaFree (which synchronize the device) as the gap
  began — the caching allocator is releasing and re-acquiring memory (near full VRAM, or emptied by
  `torch.cuda.empty_cache()`). Whatever a gap's cause, the part of it the host spent in those calls
  is allocator time too.
- unattributed: no launch record links the next activity to a host thread.

Idle time while the profiler stalled the workload for its own bookkeeping (CUPTI's buffer requests:
`window.profiler_own`) is left out of the window, as are the profiler's start and warm-up.

Communication (NCCL) counts as busy only where no computation runs beside it: the exposed part, what
adds to step time; overlapped collectives cost nothing.

Busy time in kernels launched with blocks for fewer than half the GPU's SMs ("blocks per SM" < 0.5
in the trace) is also summed: the GPU is busy by nvidia-smi while most SMs have nothing to run
(a grid of 128 blocks on 132 SMs leaves 4 idle: not underfilled). Communication kernels use few
blocks by design and are never underfilled.
"""

from __future__ import annotations

from itertools import compress
from operator import add as plus

from gputriage.model.numbers import median
from gputriage.model.trace import Anatomy, HostWork, StepRow, Syncs, TimeShare
from gputriage.trace import kernel_kinds as kk
from gputriage.trace.host_calls import ALLOC_CALLS, calls_in, step_rows, sync_summary
from gputriage.trace.kernels import gpu_kinds
from gputriage.trace.load import KERNEL, Columns
from gputriage.trace.loading import loader_spans, outside_ops_cause
from gputriage.trace.thread_ops import ThreadOps, thread_ops
from gputriage.trace.window import Intervals, Sweep, complete_until, profiler_own, profiler_warmup_end

UNDERFILLED_BLOCKS_PER_SM = 0.5  # below: the kernel's blocks leave most SMs without work
QUEUED_US = 1000.0  # a first kernel that starts this long after its launch waited behind earlier work

SYNC_CALLS = {
    "cudaStreamSynchronize",
    "cudaDeviceSynchronize",
    "cudaEventSynchronize",
    "cudaMemcpy",
    "cudaMemcpy2D",
    "cuStreamSynchronize",
    "cuCtxSynchronize",
    "cuEventSynchronize",
    "cuMemcpyDtoH_v2",
    "cudaStreamQuery_blocking",
}
LAUNCH_COVERAGE = 0.5  # share of a gap the launching thread must spend in framework ops to call it launch-bound
LAUNCH_GAP_MAX_US = 500.0  # longer gaps inside framework ops are host-side work, not launch overhead
SYNC_TOLERANCE_US = 5.0
IDLE_KINDS: tuple[str, ...] = ("launch", "sync", "allocator", "host_in_ops", "host_after_read", "host_loading")
IDLE_KINDS += ("host_loop", "host_outside_ops", "unattributed")
READ_BACK = frozenset({kk.D2H_PAGEABLE, kk.D2H_PINNED})


def _anatomy(
    device: int,
    window_us: float,
    busy_us: dict[str, float],
    idle_us: dict[str, float],
    syncs: Syncs,
    gaps: list[float],
    durations: list[float],
    steps: list[StepRow],
    underfilled_us: float,
    warmup_skipped_us: float,
    queued_skipped_us: float,
    startup_skipped_us: float,
    host_work: dict[tuple[str, str], list[float]],
) -> Anatomy:
    w = window_us or 1.0
    work = sorted(
        (
            HostWork(op=op, where=where, gaps=int(v[0]), gpu_idle_us=round(v[1], 1))
            for (op, where), v in host_work.items()
        ),
        key=lambda h: -h.gpu_idle_us,
    )
    busy_total, idle_total = sum(busy_us.values()), sum(idle_us.values())
    return Anatomy(
        device=device,
        window_us=round(window_us, 1),
        busy_us=round(busy_total, 1),
        idle_us=round(idle_total, 1),
        busy_pct=round(100 * busy_total / w, 1),
        busy={k: TimeShare(round(v, 1), round(100 * v / w, 1)) for k, v in busy_us.items() if v > 0},
        idle={k: TimeShare(round(v, 1), round(100 * v / w, 1)) for k, v in idle_us.items() if v > 0},
        syncs=syncs,
        gaps=len(gaps),
        kernels=len(durations),
        median_kernel_us=round(_median(durations), 2),
        median_gap_us=round(_median(gaps), 2),
        host_work=work[:10],
        warmup_skipped_us=round(warmup_skipped_us, 1),
        queued_skipped_us=round(queued_skipped_us, 1),
        startup_skipped_us=round(startup_skipped_us, 1),
        underfilled_us=round(underfilled_us, 1),
        underfilled_busy_pct=round(100 * underfilled_us / busy_total, 1) if busy_total else 0.0,
        steps=steps,
    )


def _median(xs: list[float]) -> float:
    return median(xs) if xs else 0.0


def _exposed_communication(
    cols: Columns, kinds: list[str], idx: list[int], lo: float, busy_total_us: float
) -> tuple[dict[str, float], float]:
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
    blocking = {i for i, name in enumerate(cols.names) if name in SYNC_CALLS or name in ALLOC_CALLS}
    sync_idx = list(compress(range(len(cols.r_name)), map(blocking.__contains__, cols.r_name)))
    sync_idx.sort(key=lambda i: cols.r_ts[i] + cols.r_dur[i])
    sync_ends = [cols.r_ts[i] + cols.r_dur[i] for i in sync_idx]
    alloc_idx = [i for i in sync_idx if cols.names[cols.r_name[i]] in ALLOC_CALLS]
    allocating = Intervals.union((cols.r_ts[i], cols.r_ts[i] + cols.r_dur[i]) for i in alloc_idx)
    own = profiler_own(cols)
    loading = loader_spans(cols)
    devices = sorted(set(cols.g_dev))
    host_start = min(cols.least("o_ts"), cols.least("r_ts"))
    host_start = 0.0 if host_start == float("inf") else host_start  # the first host event
    # without step markers the window starts at the first CUDA call: before it, the profiler was starting
    # (CUPTI attaches on the first CUDA call, 2-3 ms on recorded H200 windows), not the workload idling
    first_call = cols.least("r_ts") if cols.r_ts else host_start
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
    whole_until = complete_until(cols) if cols.truncated else float("inf")
    launch_of = list(map(corr_to_rt.get, cols.g_corr))  # each GPU activity's launch call
    out = []
    g_ts, g_dur, g_kind, g_bpsm = cols.g_ts, cols.g_dur, cols.g_kind, cols.g_bpsm
    for dev in devices:
        idx = list(range(len(g_ts))) if len(devices) == 1 else [i for i, d in enumerate(cols.g_dev) if d == dev]
        idx.sort(key=g_ts.__getitem__)
        if not idx:
            continue
        first_gpu = g_ts[idx[0]]
        ends = list(map(plus, map(g_ts.__getitem__, idx), map(g_dur.__getitem__, idx)))
        last_gpu = max(ends)
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
            idx, ends = _kept([e >= lo for e in ends], idx, ends)
            hi = max([hi] + ends[-1:])
        if cols.truncated:  # judge only the span where every launch still has its GPU activity
            hi = max(lo, min(hi, last_gpu, whole_until))
            idx, ends = _kept([g_ts[i] < hi for i in idx], idx, ends)
        busy = dict.fromkeys(kk.BUSY_KINDS, 0.0)
        idle = dict.fromkeys(IDLE_KINDS, 0.0)
        sync_by_op: dict[str, dict[str, float]] = {}
        host_work: dict[tuple[str, str], list[float]] = {}
        gaps: list[float] = []
        prev = -1
        underfilled = 0.0
        profiler_us = 0.0
        cursor = lo
        theirs_in, allocs_in = Sweep(own), Sweep(allocating)
        r_ts, n_syncs, j = cols.r_ts, len(sync_ends), 0  # j: the first sync ending near or after the cursor
        small = [kinds[i] != kk.COMM and 0 <= g_bpsm[i] < UNDERFILLED_BLOCKS_PER_SM for i in idx]
        for i, s, e, few_blocks in zip(idx, map(g_ts.__getitem__, idx), ends, small):
            s_clip = s if s > lo else lo
            if s_clip > cursor:
                # the profiler's own stalls: not the workload's time
                theirs = theirs_in.covered(cursor, s_clip) if theirs_in.ahead < s_clip else 0.0
                profiler_us += theirs
                gap = s_clip - cursor - theirs
                if gap > 0:
                    gaps.append(gap)
                    # the common case first: no sync returned near the gap's start, and the launch call of what came
                    # next had begun before the GPU ran dry (`_gap_cause` decides every other)
                    while j < n_syncs and sync_ends[j] < cursor - SYNC_TOLERANCE_US:  # the cursor only moves on
                        j += 1
                    rt = launch_of[i]
                    if (j >= n_syncs or sync_ends[j] > s_clip) and rt is not None and r_ts[rt] <= cursor:
                        cause, op = "launch", None
                    else:
                        cause, op = _gap_cause(
                            cols,
                            ops,
                            sync_idx,
                            sync_ends,
                            cursor,
                            s_clip,
                            j,
                            rt,
                            prev >= 0 and kinds[prev] in READ_BACK,
                            loading,
                        )
                    if cause == "host_after_read":
                        op = _launching_op(cols, ops, corr_to_rt, prev)
                    if allocs_in.ahead < s_clip:
                        gap -= _allocating(idle, allocs_in, cursor, s_clip, gap, cause)
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
                add = e - (s_clip if s_clip > cursor else cursor)
                busy[kinds[i]] += add
                if few_blocks:
                    underfilled += add
                cursor = e
            prev = i
        durations = [g_dur[i] for i in idx if g_kind[i] == KERNEL]
        if busy[kk.COMM]:  # communication counts only where no computation overlaps it
            busy, underfilled = _exposed_communication(cols, kinds, idx, lo, sum(busy.values()))
        if hi > cursor:  # trailing idle: the host did not issue more work
            theirs = theirs_in.covered(cursor, hi)
            profiler_us += theirs
            rest = hi - cursor - theirs
            idle["host_outside_ops"] += rest - _allocating(idle, allocs_in, cursor, hi, rest, "host_outside_ops")
        syncs = sync_summary(cols, ops, sync_idx, lo, hi, sync_by_op)
        steps = step_rows(cols, idx, kinds, until=hi if cols.truncated else None) if cols.steps else []
        a = _anatomy(
            dev,
            hi - lo - profiler_us,
            busy,
            idle,
            syncs,
            gaps,
            durations,
            steps,
            underfilled,
            skipped,
            queued,
            startup,
            host_work,
        )
        a.profiler_skipped_us, a.start_us, a.end_us = round(profiler_us, 1), lo, hi
        a.allocator_calls = calls_in(cols, alloc_idx, lo, hi)
        out.append(a)
    return out


def _kept(keep: list[bool], idx: list[int], ends: list[float]) -> tuple[list[int], list[float]]:
    return list(compress(idx, keep)), list(compress(ends, keep))


def _allocating(idle: dict[str, float], allocating: Sweep, a: float, b: float, gap: float, cause: str) -> float:
    """The part of an idle gap the host spent in cudaMalloc/cudaFree, booked as allocator time (what the caching
    allocator cost, whatever else the host did in the gap); the time booked."""
    if cause == "allocator":
        return 0.0
    spent = min(gap, allocating.covered(a, b))
    idle["allocator"] += spent
    return spent


def _gap_cause(
    cols: Columns,
    ops: dict[int, ThreadOps],
    sync_idx: list[int],
    sync_ends: list[float],
    a: float,
    b: float,
    j: int,
    rt: int | None,
    after_read: bool = False,
    loading: dict[int, ThreadOps] | None = None,
) -> tuple[str, str | None]:
    """The idle gap [a, b]'s cause (module doc), and the op it is attributed to. `j`: the first sync to end at or
    after a - SYNC_TOLERANCE_US; `rt`: the launch call of the GPU activity after the gap; `after_read`: the GPU's
    last activity before the gap was a copy to the host."""
    # a sync that returned as the gap began (the queue had drained while the host waited)
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
    return outside_ops_cause(loading, cols.r_tid[rt], a, b, LAUNCH_GAP_MAX_US), None


def _computing_op(cols: Columns, t: ThreadOps | None, mid: float) -> str | None:
    """The optimizer step a host computation falls in, else the outermost framework op covering it."""
    step = cols.optimizer_spans().first_holding(mid)
    if step is not None:
        return step
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
