"""Each host thread's top-level framework ops, for the questions an idle gap asks: which op was the
thread in at a moment, and how much of an interval did ops cover."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from gputriage.trace.load import Columns


@dataclass
class ThreadOps:
    """Top-level framework ops of one host thread, for containment and coverage queries."""

    starts: list[float] = field(default_factory=list)
    ends: list[float] = field(default_factory=list)
    names: list[int] = field(default_factory=list)

    def outermost(self, t: float) -> int | None:
        i = bisect.bisect_right(self.starts, t) - 1
        if i >= 0 and self.ends[i] >= t:
            return self.names[i]
        return None

    def coverage(self, a: float, b: float) -> float:
        """Time in [a, b] covered by top-level ops (they do not overlap each other)."""
        if b <= a or not self.starts:
            return 0.0
        lo = bisect.bisect_right(self.ends, a)
        hi = bisect.bisect_left(self.starts, b)
        total = 0.0
        for i in range(lo, min(hi, len(self.starts))):
            total += max(0.0, min(self.ends[i], b) - max(self.starts[i], a))
        return total


def thread_ops(cols: Columns) -> dict[int, ThreadOps]:
    """Each host thread's top-level ops: an op starting inside the previous top-level one is nested in
    it. Kineto writes each thread's ops by start, the longest first: one pass then; a file in any other
    order is sorted first."""
    out: dict[int, ThreadOps] = {}
    last: dict[int, list[float]] = {}  # per thread: [start, duration, end of its current top-level op]
    for tid, s, d, name in zip(cols.o_tid, cols.o_ts, cols.o_dur, cols.o_name):
        st = last.get(tid)
        if st is None:
            st = last[tid] = [s, d, float("-inf")]
            out[tid] = ThreadOps()
        elif s < st[0] or (s == st[0] and d > st[1]):
            return _sorted_thread_ops(cols)
        st[0], st[1] = s, d
        if s >= st[2]:
            st[2] = s + d
            t = out[tid]
            t.starts.append(s)
            t.ends.append(s + d)
            t.names.append(name)
    return out


def _sorted_thread_ops(cols: Columns) -> dict[int, ThreadOps]:
    """As `thread_ops`, for ops in any order: sorted by thread, start and longest first (one sort of tuples)."""
    order = sorted(zip(cols.o_tid, cols.o_ts, [-d for d in cols.o_dur], range(len(cols.o_ts))))
    names = cols.o_name
    out: dict[int, ThreadOps] = {}
    cur_tid, cur_end = None, float("-inf")
    t = ThreadOps()
    for tid, s, neg_dur, i in order:
        if tid != cur_tid:
            t = out[tid] = ThreadOps()
            cur_tid, cur_end = tid, float("-inf")
        if s >= cur_end:
            cur_end = s - neg_dur
            t.starts.append(s)
            t.ends.append(cur_end)
            t.names.append(names[i])
    return out
