"""What an idle gap spent outside framework ops was, where the window shows the DataLoader's own events (the
profiler marks each batch it hands out: `enumerate(DataLoader)#..__next__`, on the thread that asks for it).

Where the launching thread spent the gap in the loader (for LOADING_COVERAGE of it or more: fetching, collating,
or waiting for its workers), the GPU waited for input: `host_loading`, seen. Where it did not, and the window shows
the loader elsewhere, the gap is the loop's own host work, not input: a short gap (< LAUNCH_GAP_MAX_US) is the
Python a loop runs between two launches (a training framework's hooks, its logging, the workload's own code between
ops), which the host takes longer to issue than the GPU to run: `launch`; a longer one is host work in the loop:
`host_loop`. A window with no loader event leaves the gap `host_outside_ops`: what it is, the trace cannot see."""

from __future__ import annotations

from gputriage.trace.load import Columns
from gputriage.trace.thread_ops import ThreadOps

LOADING_COVERAGE = 0.5  # share of a gap the launching thread must spend in the loader for the GPU to wait for input


def loader_spans(cols: Columns) -> dict[int, ThreadOps] | None:
    """Each thread's spans in the DataLoader (they do not nest); None where the window shows none."""
    if not cols.loading:
        return None
    out: dict[int, ThreadOps] = {}
    for tid, ts, dur in sorted(cols.loading, key=lambda x: (x[0], x[1])):
        t = out.setdefault(tid, ThreadOps())
        if t.ends and ts < t.ends[-1]:  # nested in the previous one (a loader wrapping a loader): counted once
            continue
        t.starts.append(ts)
        t.ends.append(ts + dur)
        t.names.append(-1)
        t.before.append(t.before[-1] + dur)
    return out


def outside_ops_cause(spans: dict[int, ThreadOps] | None, tid: int | None, a: float, b: float, short_us: float) -> str:
    """The cause of an idle gap [a, b] the launching thread (`tid`) spent outside framework ops (module doc)."""
    if spans is None or tid is None:
        return "host_outside_ops"
    t = spans.get(tid)
    if t is not None and b > a and t.coverage(a, b) / (b - a) >= LOADING_COVERAGE:
        return "host_loading"
    return "launch" if b - a < short_us else "host_loop"
