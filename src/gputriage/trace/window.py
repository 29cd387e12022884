"""What of a trace's time is the workload's to judge: not the profiler's own stalls, not a first step slowed by
the profiler warming up, and in a cut file only the span whose record is whole.

- The profiler's own overhead: CUPTI stalls the thread that records an activity while it hands over a full
  buffer and gets a new one ("Activity Buffer Request", 2-3 ms each on recorded H200 traces, several per window
  once a window holds many events), and while it flushes, instruments or sets up (Kineto's overhead events
  "Buffer Flush", "Instrumentation", "Resource", "UVM Activity Init"). GPU idle time under them is the
  profiler's, left out of the window. CUDA's own lazy loading ("Lazy Function Loading", "Runtime Triggered
  Module Loading") and a full launch queue ("Command Buffer Full") are the workload's and stay.
- A cut file: Kineto writes the host's ops first, then the CUDA runtime calls and GPU activities buffer by
  buffer, one buffer per launching thread (CUPTI's per-thread buffers), the buffers in no time order: a cut
  keeps some buffers whole and one in part, and loses the rest, from anywhere in the window.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from gputriage.model.numbers import median
from gputriage.trace.load import Columns

PROFILER_OWN = frozenset(
    {
        "Activity Buffer Request",
        "Buffer Flush",
        "Instrumentation",
        "Resource",
        "UVM Activity Init",
        "CUPTI Buffer Flush",
        "CUPTI Instrumentation",
        "CUPTI Resource",
    }
)
WARMUP_STEP_RATIO = 3.0
LAUNCHING_SHARE = 0.5  # of an op's instances with GPU work, for the op to be one that launches it


@dataclass
class Intervals:
    """Disjoint time intervals, sorted, for the time of [a, b] they cover."""

    starts: list[float] = field(default_factory=list)
    ends: list[float] = field(default_factory=list)

    @classmethod
    def union(cls, spans: Iterable[tuple[float, float]]) -> Intervals:
        out = cls()
        for s, e in sorted(spans):
            if e <= s:
                continue
            if out.ends and s <= out.ends[-1]:
                out.ends[-1] = max(out.ends[-1], e)
            else:
                out.starts.append(s)
                out.ends.append(e)
        return out

    def covered(self, a: float, b: float) -> float:
        """Time in [a, b] inside the intervals."""
        if b <= a or not self.starts:
            return 0.0
        i = bisect.bisect_right(self.ends, a)
        total = 0.0
        while i < len(self.starts) and self.starts[i] < b:
            total += min(self.ends[i], b) - max(self.starts[i], a)
            i += 1
        return total

    def holds(self, t: float) -> bool:
        """Whether t falls in one of the intervals."""
        i = bisect.bisect_right(self.starts, t) - 1
        return i >= 0 and t <= self.ends[i]

    def __len__(self) -> int:
        return len(self.starts)


class Sweep:
    """Time covered by intervals in windows asked for in time order (a window never starts before the last one
    did): `ahead` is where the next interval that matters starts, so a window ending before it needs no call."""

    def __init__(self, intervals: Intervals) -> None:
        self.starts, self.ends, self.i = intervals.starts, intervals.ends, 0
        self.ahead = self.starts[0] if self.starts else float("inf")

    def covered(self, a: float, b: float) -> float:
        starts, ends, i, n = self.starts, self.ends, self.i, len(self.starts)
        while i < n and ends[i] <= a:
            i += 1
        self.i = i
        self.ahead = starts[i] if i < n else float("inf")
        total = 0.0
        while i < n and starts[i] < b:
            total += min(ends[i], b) - max(starts[i], a)
            i += 1
        return total


def profiler_own(cols: Columns) -> Intervals:
    """When the profiler stalled the workload for its own bookkeeping (module doc)."""
    return Intervals.union((ts, ts + dur) for name, ts, dur in cols.overheads if name in PROFILER_OWN)


def profiler_warmup_end(cols: Columns, host_start: float) -> float | None:
    """Where a training loop's first profiled step ends, when that step ran far slower than the rest
    (CUDA lazy loading and CUPTI instrumenting each kernel's first launch: profiler warm-up, not the
    workload). Steps are delimited by optimizer steps; None when fewer than 3 or no outlier."""
    ends = sorted(ts + dur for ts, dur, _ in cols.optimizer_steps)
    if len(ends) < 3:
        return None
    first = ends[0] - host_start
    rest = [b - a for a, b in zip(ends, ends[1:])]
    return ends[0] if first > WARMUP_STEP_RATIO * median(rest) else None


def _runs_last(stamps: Sequence[float]) -> list[float]:
    """The last timestamp of each run of a column in file order, a run ending where time goes back (a buffer
    boundary: each buffer's records are in time order, the buffers are not)."""
    out: list[float] = []
    prev = float("-inf")
    top = float("-inf")
    for t in stamps:
        if t < prev:
            out.append(top)
            top = float("-inf")
        top = max(top, t)
        prev = t
    if top > float("-inf"):
        out.append(top)
    return out


def _leaf_ops(cols: Columns) -> list[int]:
    """Ops with an external id that hold no other op of their thread (an op nested in one of its own name, as
    aten::div in aten::div, launches through the inner one)."""
    order = sorted(range(len(cols.o_ts)), key=lambda i: (cols.o_tid[i], cols.o_ts[i], -cols.o_dur[i]))
    out = []
    for k, i in enumerate(order):
        nxt = order[k + 1] if k + 1 < len(order) else None
        holds = nxt is not None and cols.o_tid[nxt] == cols.o_tid[i] and cols.o_ts[nxt] < cols.o_ts[i] + cols.o_dur[i]
        if not holds and cols.o_ext[i] >= 0:
            out.append(i)
    return out


def complete_until(cols: Columns) -> float:
    """In a cut file, where the record stops being whole (module doc): the earliest last start of any buffer of
    GPU activities read (one of them was cut there; a thread's runtime calls share its buffer, so they are whole
    up to there too), and before it, the first op of a kind that launches GPU work whose work is missing, on a
    thread after its last runtime call read (a buffer lost whole)."""
    if cols.activities_whole:  # cut after its last activity: every record is there
        return float("inf")
    until = min(_runs_last(cols.g_ts), default=float("inf"))
    launched = set(cols.g_ext)
    last_call: dict[int, float] = {}  # per thread, its last runtime call read
    for t, tid in zip(cols.r_ts, cols.r_tid):
        if t > last_call.get(tid, float("-inf")):
            last_call[tid] = t
    thread_of = dict(zip(cols.r_corr, cols.r_tid))
    last_gpu: dict[int, float] = {}  # per thread, the last start of GPU work it launched that was read
    for t, corr in zip(cols.g_ts, cols.g_corr):
        tid = thread_of.get(corr)
        if tid is not None and t > last_gpu.get(tid, float("-inf")):
            last_gpu[tid] = t
    leaves = [i for i in _leaf_ops(cols) if cols.o_ts[i] < until]
    kept: dict[int, list[int]] = {}  # per op name: [instances with GPU work, instances] where the record is whole
    for i in leaves:
        if cols.o_tid[i] in last_call and cols.o_ts[i] <= last_call[cols.o_tid[i]]:
            tally = kept.setdefault(cols.o_name[i], [0, 0])
            tally[0] += cols.o_ext[i] in launched
            tally[1] += 1
    for i in leaves:
        seen = kept.get(cols.o_name[i])
        tid = cols.o_tid[i]
        # a thread none of whose calls was read (its buffers lost whole) may have launched any of its ops' work
        launching = seen[0] >= LAUNCHING_SHARE * seen[1] if seen else tid not in last_call
        if launching and cols.o_ext[i] not in launched and cols.o_ts[i] > last_call.get(tid, float("-inf")):
            # its GPU work ran after it was launched, and after the work its thread launched before it
            until = min(until, max(cols.o_ts[i], last_gpu.get(tid, float("-inf"))))
    return until
