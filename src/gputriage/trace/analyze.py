"""Analyze one Kineto trace (one rank): time anatomy per device, kernel table, communication
overlap. What it means is judged in `diagnosis.trace.judge`."""

from __future__ import annotations

import bisect
import time

from gputriage.model.files import FileName
from gputriage.model.numbers import median
from gputriage.model.specs import match
from gputriage.model.trace import Overlap, RankAnalysis
from gputriage.trace import kernel_kinds as kk
from gputriage.trace.anatomy import analyze as anatomy_of
from gputriage.trace.compiled import share as compiled_share
from gputriage.trace.kernels import gpu_kinds, table
from gputriage.trace.load import KERNEL, Columns
from gputriage.trace.load_parallel import read
from gputriage.trace.window import WARMUP_STEP_RATIO

LARGE_TENSOR_BYTES = 64 * 2**20  # elementwise ops over tensors this large stream from HBM (beyond any L2)


def _elementwise_bytes(cols: Columns, kinds: list[str]) -> tuple[float, int]:
    """Median bytes per elementwise op, and how many distinct elementwise kernels run over large tensors."""
    sizes, big_names = [], set()
    for cost, k, name in zip(cols.gpu_costs(), kinds, cols.g_name):
        if k == kk.ELEMENTWISE:
            b = cost[1] if cost is not None else 0.0
            if b:
                sizes.append(b)
                if b >= LARGE_TENSOR_BYTES:
                    big_names.add(name)
    return (median(sizes) if sizes else 0.0), len(big_names)


def _overlap(cols: Columns, kinds: list[str], device: int) -> Overlap | None:
    """Share of communication kernel time that runs while a compute kernel runs on another stream."""
    comm = [
        (cols.g_ts[i], cols.g_ts[i] + cols.g_dur[i])
        for i, k in enumerate(kinds)
        if k == kk.COMM and cols.g_dev[i] == device
    ]
    if not comm:
        return None
    compute = sorted(
        (cols.g_ts[i], cols.g_ts[i] + cols.g_dur[i])
        for i, k in enumerate(kinds)
        if k != kk.COMM and cols.g_kind[i] == KERNEL and cols.g_dev[i] == device
    )
    merged: list[list[float]] = []
    for s, e in compute:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    starts = [m[0] for m in merged]
    total = overlapped = 0.0
    for s, e in comm:
        total += e - s
        j = max(0, bisect.bisect_right(starts, s) - 1)
        while j < len(merged) and merged[j][0] < e:
            overlapped += max(0.0, min(e, merged[j][1]) - max(s, merged[j][0]))
            j += 1
    return Overlap(comm_us=round(total, 1), overlapped_pct=round(100 * overlapped / total, 1) if total else 0.0)


STARTUP_NOTE_US = 1000.0  # a shorter start-up is not worth a note


def _int(value: object) -> int | None:
    """A positive integer from a trace header, or None for anything else."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def analyze_file(path: FileName) -> RankAnalysis:
    """Raises TraceError when the file is not a usable trace."""
    t0 = time.perf_counter()
    cols = read(path)
    kinds = gpu_kinds(cols)
    props = cols.header.deviceProperties[0] if cols.header.deviceProperties else {}
    name = props.get("name") if isinstance(props.get("name"), str) else None
    spec = match(None, _int(props.get("totalGlobalMem")), name, _int(props.get("numSms")))
    anatomies = anatomy_of(cols, kinds)
    rank = (cols.header.distributedInfo or {}).get("rank")
    result = RankAnalysis(
        file=str(path),
        rank=rank,
        events=cols.events,
        file_bytes=cols.file_bytes,
        gpu=name,
        spec=spec.name if spec else None,
        problems=list(cols.problems),
        skipped_event_kinds=dict(sorted(cols.skipped_kinds.items())),
        anatomy=anatomies,
        step_count=len(cols.steps),
        truncated=cols.truncated,
        readers=cols.workers,
        readers_memory_bytes=cols.workers_memory_bytes,
    )
    if not anatomies:
        result.problems.append("no GPU activity (kernels, copies) in this trace: was CUDA profiling on?")
        result.analysis_s = round(time.perf_counter() - t0, 3)
        return result
    main = max(anatomies, key=lambda a: a.busy_us)
    result.main_device = main.device
    if cols.truncated:
        in_file = sum(1 for d in cols.g_dev if d == main.device)
        beyond = sum(1 for d, t in zip(cols.g_dev, cols.g_ts) if d == main.device and t >= main.end_us)
        result.problems.append(
            f"judged over the {main.window_us / 1000:.1f} ms where both the host's and the GPU's "
            "record are whole (a cut file loses GPU activities from anywhere in the window: "
            f"{beyond:,} of the {in_file:,} GPU activities read lie beyond it and are left out)"
        )
    if main.warmup_skipped_us:
        result.problems.append(
            f"the first profiled step ({main.warmup_skipped_us / 1000:.0f} ms, over {WARMUP_STEP_RATIO:g}x the later "
            "steps) is left out: profiler warm-up (kernels loaded and instrumented at their first launch)"
        )
    if main.startup_skipped_us >= STARTUP_NOTE_US:
        result.problems.append(
            f"the first {main.startup_skipped_us / 1000:.1f} ms, before the first CUDA call, are left out: the "
            "profiler starting (no step markers tell the workload's own start)"
        )
    if main.profiler_skipped_us >= STARTUP_NOTE_US:
        result.problems.append(
            f"{main.profiler_skipped_us / 1000:.1f} ms of GPU idle while the profiler stalled the workload for its own "
            "buffers (CUPTI's buffer requests) are left out: the profiler's time, not the workload's"
        )
    if main.queued_skipped_us:
        result.problems.append(
            f"the first {main.queued_skipped_us / 1000:.0f} ms are left out: the GPU was still running work queued "
            "before the profiler started (its first recorded kernel waited that long after its launch)"
        )
    result.kernels = table(cols, kinds, spec)
    result.elementwise_median_bytes, result.elementwise_large_kernels = _elementwise_bytes(cols, kinds)
    result.overlap = _overlap(cols, kinds, main.device)
    result.compiled = compiled_share(cols, main.device, main.start_us, main.end_us)
    result.analysis_s = round(time.perf_counter() - t0, 3)
    return result
