"""Each host thread's top-level framework ops, for the questions an idle gap asks: which op was the
thread in at a moment, and how much of an interval did ops cover."""

from __future__ import annotations

import bisect
from itertools import groupby
from typing import Sequence

from gputriage.trace.load import Columns


class ThreadOps:
    """Top-level framework ops of one host thread, for containment and coverage queries."""

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.names: list[int] = []
        self.before: list[float] = [0.0]  # before[i]: the durations of ops[:i], summed
        self._first_not_ended = 0  # the first op ending after the last moment `coverage` was asked about

    def outermost(self, t: float) -> int | None:
        i = bisect.bisect_right(self.starts, t) - 1
        if i >= 0 and self.ends[i] >= t:
            return self.names[i]
        return None

    def coverage(self, a: float, b: float) -> float:
        """Time in [a, b] covered by top-level ops (they do not overlap each other): the ops between, less what the
        first starts before a and the last ends after b. Asked in time order (a sweep through the window), the ops
        are found by stepping on from the last answer; asked about an earlier moment, by bisection."""
        if b <= a:
            return 0.0
        starts, ends, n = self.starts, self.ends, len(self.ends)
        lo = self._first_not_ended
        if lo and ends[lo - 1] > a:
            lo = bisect.bisect_right(ends, a)
        else:
            while lo < n and ends[lo] <= a:
                lo += 1
        self._first_not_ended = lo
        hi = lo  # the first op starting at or after b
        while hi < n and starts[hi] < b:
            hi += 1
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
    where a thread's ops are not in that order. A run of one thread's ops (Kineto writes each thread's
    buffer whole) is walked with that thread's state in local names."""
    out: dict[int, ThreadOps] = {}
    # per thread: its last op's start and duration, and the end of its current top-level op
    last: dict[int, tuple[float, float, float]] = {}
    lo = 0
    for tid, run in groupby(tids):
        hi = lo + len(list(run))
        t = out.get(tid)
        if t is None:
            t = out[tid] = ThreadOps()
            s0, d0, end = float("-inf"), 0.0, float("-inf")
        else:
            s0, d0, end = last[tid]
        add_start, add_end, add_name, add_before = t.starts.append, t.ends.append, t.names.append, t.before.append
        total = t.before[-1]
        for s, d, name in zip(starts[lo:hi], durations[lo:hi], names[lo:hi]):
            if s < s0 or (s == s0 and d > d0):
                return None
            s0, d0 = s, d
            if s >= end:
                end = s + d
                add_start(s)
                add_end(end)
                add_name(name)
                total += d
                add_before(total)
        last[tid] = (s0, d0, end)
        lo = hi
    return out
