"""What the host called in a profiled window: the CUDA runtime calls over an interval, the synchronizations and
what they waited for, and the profiler steps as rows (`trace.anatomy` reads them)."""

from __future__ import annotations

import bisect

from gputriage.model.trace import StepRow, SyncOp, Syncs
from gputriage.trace.load import Columns
from gputriage.trace.thread_ops import ThreadOps

ALLOC_CALLS = {"cudaMalloc", "cudaFree", "cudaMallocAsync", "cudaFreeAsync", "cuMemAlloc_v2", "cuMemFree_v2"}


def calls_in(cols: Columns, idx: list[int], lo: float, hi: float) -> dict[str, int]:
    """How many of the calls `idx` started in [lo, hi], by name."""
    out: dict[str, int] = {}
    for i in idx:
        if lo <= cols.r_ts[i] <= hi:
            name = cols.names[cols.r_name[i]]
            out[name] = out.get(name, 0) + 1
    return out


def sync_summary(
    cols: Columns,
    ops: dict[int, ThreadOps],
    sync_idx: list[int],
    lo: float,
    hi: float,
    by_op_idle: dict[str, dict[str, float]],
) -> Syncs:
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
    rows = [
        SyncOp(
            op=key,
            calls=int(v["calls"]),
            host_blocked_us=round(v["host_blocked_us"], 1),
            gpu_idle_after_us=round(by_op_idle.get(key, {}).get("gpu_idle_after_us", 0.0), 1),
        )
        for key, v in by_op.items()
    ]
    rows.sort(key=lambda r: (-r.gpu_idle_after_us, -r.calls))
    return Syncs(count=count, host_blocked_us=round(blocked, 1), by_op=rows[:10])


def step_rows(cols: Columns, idx: list[int], kinds: list[str], until: float | None = None) -> list[StepRow]:
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
        for i in idx[max(0, lo - 1) : hi]:
            a, b = max(cols.g_ts[i], s), min(cols.g_ts[i] + cols.g_dur[i], e)
            if b > cursor and b > a:
                add = b - max(a, cursor)
                busy += add
                by_kind[kinds[i]] = by_kind.get(kinds[i], 0.0) + add
                cursor = b
        top = max(by_kind, key=lambda k: by_kind[k]) if by_kind else None
        out.append(
            StepRow(
                step=str(name), dur_us=round(d, 1), gpu_busy_pct=round(100 * busy / d, 1) if d else 0.0, top_kind=top
            )
        )
    return out
