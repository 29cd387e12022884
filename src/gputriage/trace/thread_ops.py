"""Each host thread's top-level framework ops, for the questions an idle gap asks: which op was the
thread in at a moment, and how much of an interval did ops cover."""

from __future__ import annotations

import bisect
from typing import Sequence

from gputriage.trace.load import Columns


class ThreadOps:
    """Top-level framework ops of one host thread, for containment and coverage queries."""

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.names: list[int] = []
        self.before: list[float] = [0.0]  # before[i]: the durations of ops[:i], summed

    def outermost(self, t: float) -> int | None:
        i = bisect.bisect_right(self.starts, t) - 1
        if i >= 0 and self.ends[i] >= t:
            return self.names[i]
        return None

    def coverage(self, a: float, b: float) -> float:
        """Time in [a, b] covered by top-level ops (they do not overlap each other): the ops between, less what the
        first starts before a and the last ends after b."""
        if b <= a:
            return 0.0
        starts, ends = self.starts, self.ends
        lo = bisect.bisect_right(ends, a)
        hi = bisect.bisect_left(starts, b)
        if hi <= lo:
            return 0.0
        total = self.before[hi] - self.before[lo]
        if starts[lo] < a:
            total -= a - starts[lo]
        if ends[hi - 1] > b:
            total -= ends[hi - 1] - b
        return total


def thread_ops(cols: Columns) -> dict[int, ThreadOps]:
    """Each host thread's top-level ops: an op starting inside the previous top-level one is nested in
    it. Kineto writes each thread's ops by start, the longest first: one pass then; a file in any other
    order is sorted first."""
    ops = _top_level(cols.o_tid, cols.o_ts, cols.o_dur, cols.o_name)
    if ops is None:
        order = sorted(range(len(cols.o_ts)), key=lambda i: (cols.o_tid[i], cols.o_ts[i], -cols.o_dur[i]))
        ops = _top_level(*([col[i] for i in order] for col in (cols.o_tid, cols.o_ts, cols.o_dur, cols.o_name)))
        assert ops is not None  # sorted
    return ops


def _top_level(
    tids: Sequence[int], starts: Sequence[float], durations: Sequence[float], names: Sequence[int]
) -> dict[int, ThreadOps] | None:
    """Each thread's top-level ops, from ops listed by start (the longest first) within each thread; None
    where a thread's ops are not in that order."""
    out: dict[int, ThreadOps] = {}
    last: dict[int, list[float]] = {}  # per thread: [start, duration, end of its current top-level op]
    for tid, s, d, name in zip(tids, starts, durations, names):
        st = last.get(tid)
        if st is None:
            st = last[tid] = [s, d, float("-inf")]
            out[tid] = ThreadOps()
        elif s < st[0] or (s == st[0] and d > st[1]):
            return None
        st[0], st[1] = s, d
        if s >= st[2]:
            st[2] = s + d
            t = out[tid]
            t.starts.append(s)
            t.ends.append(s + d)
            t.names.append(name)
            t.before.append(t.before[-1] + d)
    return out
