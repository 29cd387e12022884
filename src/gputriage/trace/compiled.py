"""How much of the GPU's work torch.compile covers: GPU time launched from inside compiled regions against
the rest, which runs eagerly (code left uncompiled, or a graph break: dynamo falls back to Python around
what it cannot trace, and no error says so).

Kineto marks compiled code on the host thread that runs it: the region dynamo entered ("Torch-Compiled
Region: 0/0", a cpu_op in recent PyTorch, a user annotation in older ones), the autograd function around
the compiled graph ("CompiledFunction", "CompiledFunctionBackward") and the call into the graph ("## Call
CompiledFxGraph ...##"). A GPU activity is compiled where the CUDA call that launched it ran inside one of
them on its thread (a CUDA graph's kernels: where its replay was launched).
"""

from __future__ import annotations

from gputriage.model.trace import CompiledShare
from gputriage.trace.load import COMPILED_ANNOTATIONS, Columns
from gputriage.trace.thread_ops import thread_ops
from gputriage.trace.window import Intervals

TOP_OPS = 5


def regions(cols: Columns) -> dict[int, list[tuple[float, float]]]:
    """The compiled regions of each host thread: (start, end)."""
    marked = {i for i, name in enumerate(cols.names) if name.startswith(COMPILED_ANNOTATIONS)}
    out: dict[int, list[tuple[float, float]]] = {}
    if marked:
        for tid, ts, dur, name in zip(cols.o_tid, cols.o_ts, cols.o_dur, cols.o_name):
            if name in marked:
                out.setdefault(tid, []).append((ts, ts + dur))
    for tid, ts, dur in cols.compiled:
        out.setdefault(tid, []).append((ts, ts + dur))
    return out


def share(cols: Columns, device: int, start_us: float, end_us: float) -> CompiledShare | None:
    """GPU time on `device` in [start_us, end_us) launched inside compiled regions and outside them; None where the
    trace holds no compiled region."""
    spans = regions(cols)
    if not spans:
        return None
    inside = {tid: Intervals.union(s) for tid, s in spans.items()}
    launch = {c: i for i, c in enumerate(cols.r_corr) if c >= 0}
    ops = thread_ops(cols)
    compiled = outside = 0.0
    by_op: dict[str, float] = {}
    for dev, ts, dur, corr in zip(cols.g_dev, cols.g_ts, cols.g_dur, cols.g_corr):
        if dev != device or not start_us <= ts < end_us:
            continue
        rt = launch.get(corr)
        if rt is None:
            continue
        tid, at = cols.r_tid[rt], cols.r_ts[rt]
        region = inside.get(tid)
        if region is not None and region.holds(at):
            compiled += dur
            continue
        outside += dur
        t = ops.get(tid)
        op = t.outermost(at) if t else None
        name = cols.names[op] if op is not None else cols.names[cols.r_name[rt]]
        by_op[name] = by_op.get(name, 0.0) + dur
    known = compiled + outside
    top = sorted(by_op.items(), key=lambda kv: -kv[1])[:TOP_OPS]
    return CompiledShare(
        regions=sum(len(r) for r in inside.values()),
        compiled_us=round(compiled, 1),
        outside_us=round(outside, 1),
        outside_pct=round(100 * outside / known, 1) if known else 0.0,
        outside_ops={k: round(v, 1) for k, v in top},
    )
