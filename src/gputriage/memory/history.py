"""The allocator's recorded history (`device_traces`: a ring of alloc and free events, each alloc with its stack)
replayed: live bytes over time, in all and by line; the troughs between steps (what stays when a step's
activations are gone) and how much they rose; which lines' live bytes grew; the out-of-memory event.

Events recorded before the ring began are unknown: a block allocated then is seen only when it is freed. The
replay counts what it sees and is offset so that it ends at the live bytes of the snapshot (each line's curve
likewise), which holds exactly when the blocks from before the ring that are still live stayed live throughout."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from gputriage.memory.frames import Key, Lines, frames_of
from gputriage.memory.snapshot import number
from gputriage.model.memory import Frame, Growth, LiveSeries

SLICES = 8  # slices of the time seen, each giving its trough
POINTS = 600  # points of the drawn series (the highest live bytes of each bin)


@dataclass
class OomSeen:
    requested: int
    device_free: int | None
    t_s: float | None  # unix seconds, where the event has its time
    stack: list[Frame]


@dataclass
class Replay:
    """What the replay of one device's events found."""

    events: int = 0
    timed: bool = False  # the events carry their times (else their order stands for time)
    span_s: float = 0.0
    first_s: float = 0.0  # the first event's time (unix seconds where timed)
    end_by_key: dict[Key, int] = field(default_factory=dict)  # live bytes of each line at the end, seen ones only
    growth_by_key: dict[Key, int] = field(default_factory=dict)  # from the first trough to the end, seen ones only
    growth: Growth | None = None
    series: LiveSeries | None = None
    oom: OomSeen | None = None


def _time(e: dict[str, Any], i: int, timed: bool) -> float:
    return number(e.get("time_us")) / 1e6 if timed else float(i)


def _fit(points: list[tuple[float, float]]) -> float:
    """Least-squares rise per second."""
    n = len(points)
    mt = sum(t for t, _ in points) / n
    mb = sum(b for _, b in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    return sum((t - mt) * (b - mb) for t, b in points) / var if var else 0.0


def troughs(points: Iterable[tuple[float, float]], source: str) -> Growth | None:
    """The lowest point of each of `SLICES` slices of the time the points span, and the rise fitted through them."""
    pts = list(points)
    if len(pts) < SLICES:
        return None
    t0, t1 = pts[0][0], pts[-1][0]
    span = t1 - t0
    if span <= 0:
        return None
    lows: list[tuple[float, float] | None] = [None] * SLICES
    for t, b in pts:
        k = min(SLICES - 1, int((t - t0) / span * SLICES))
        low = lows[k]
        if low is None or b < low[1]:
            lows[k] = (t - t0, b)
    got = [p for p in lows if p is not None]
    if len(got) < 3:
        return None
    rise = _fit(got) * (got[-1][0] - got[0][0])
    return Growth(
        source=source,
        t_s=[round(t, 3) for t, _ in got],
        trough_bytes=[int(b) for _, b in got],
        grown_bytes=int(rise),
        span_s=round(span, 3),
    )


def _oom(e: dict[str, Any], t: float | None) -> OomSeen:
    free = e.get("device_free")
    return OomSeen(
        requested=number(e.get("size")),
        device_free=free if isinstance(free, int) and not isinstance(free, bool) else None,
        t_s=t,
        stack=frames_of(e.get("frames")),
    )


def _size(e: dict[str, Any]) -> int:
    n = e.get("size")
    return n if type(n) is int and n > 0 else 0


def _addr(e: dict[str, Any]) -> int:
    a = e.get("addr")
    return a if type(a) is int else -1


class _Pass:
    """The one pass over a device's events: live bytes (in all, by line, by drawn line), the lowest point of each
    slice of time, the highest of each drawn bin, the bytes freed."""

    def __init__(self, lines: Lines, drawn: list[Key], t0: float, span: float, timed: bool) -> None:
        self.lines, self.t0, self.span, self.timed = lines, t0, span or 1.0, timed
        self.index = {k: i for i, k in enumerate(drawn)}
        self.live = self.freed = 0
        self.by_key: dict[Key, int] = {}
        self.per = [0] * len(drawn)
        self.blocks: dict[int, tuple[int, Key, int]] = {}
        self.lows: list[tuple[float, int, int] | None] = [None] * SLICES  # (seconds, live, event index)
        self.bins: dict[int, tuple[float, int, list[int]]] = {}
        self.oom: OomSeen | None = None

    def run(self, events: list[dict[str, Any]]) -> None:
        """The events in order: the slice and the bin of each found by walking their edges forward (one comparison
        an event), the line of each allocation from the cache of its frames list."""
        lines, by_key, blocks, per, index = self.lines, self.by_key, self.blocks, self.per, self.index
        cached = lines.cache
        t0, timed, lows, bins = self.t0, self.timed, self.lows, self.bins
        slice_s, bin_s = self.span / SLICES, self.span / POINTS
        k = b = 0
        slice_end, bin_end = slice_s, bin_s
        low_live, top_live = None, None
        live = freed = 0
        for i, e in enumerate(events):
            action = e["action"]
            t = e["time_us"] / 1e6 - t0 if timed else float(i) - t0
            if action == "oom":
                self.oom = _oom(e, t + t0 if timed else None)
                continue
            size = e.get("size")
            if type(size) is not int or size < 0:
                size = 0
            addr = e.get("addr")
            if type(addr) is not int:
                addr = -1
            if action == "alloc":
                frames = e.get("frames")
                got = cached.get(id(frames))
                key = (got if got is not None else lines.of(frames))[0]
                j = index.get(key, -1)
                blocks[addr] = (size, key, j)
                live += size
                by_key[key] = by_key.get(key, 0) + size
                if j >= 0:
                    per[j] += size
            else:
                known = blocks.pop(addr, None)
                if known is None:
                    live -= size
                    freed += size
                else:
                    live -= known[0]
                    freed += known[0]
                    by_key[known[1]] -= known[0]
                    if known[2] >= 0:
                        per[known[2]] -= known[0]
            if t >= slice_end and k < SLICES - 1:
                while t >= slice_end and k < SLICES - 1:
                    k += 1
                    slice_end += slice_s
                low_live = None
            if low_live is None or live < low_live:
                low_live = live
                lows[k] = (t, live, i)
            if t >= bin_end and b < POINTS - 1:
                while t >= bin_end and b < POINTS - 1:
                    b += 1
                    bin_end += bin_s
                top_live = None
            if top_live is None or live > top_live:
                top_live = live
                bins[b] = (t, live, per[:])
        self.live, self.freed = live, freed


def _by_key_until(events: list[dict[str, Any]], lines: Lines, last: int) -> dict[Key, int]:
    """Live bytes by line (seen ones only) after the events up to index `last`."""
    by_key: dict[Key, int] = {}
    blocks: dict[int, tuple[int, Key]] = {}
    for e in events[: last + 1]:
        action = e["action"]
        if action == "alloc":
            key = lines.of(e.get("frames"))[0]
            size = _size(e)
            blocks[_addr(e)] = (size, key)
            by_key[key] = by_key.get(key, 0) + size
        elif action == "free_completed":
            known = blocks.pop(_addr(e), None)
            if known is not None:
                by_key[known[1]] -= known[0]
    return by_key


def replay(
    trace: list[dict[str, Any]], lines: Lines, end_live: int, end_by_line: dict[Key, int], drawn: list[Key]
) -> Replay:
    """Replay a device's events. `end_live`, `end_by_line`: the live bytes the snapshot shows at the end, in all and
    by line, which the replay's curves are offset to meet; `drawn`: the lines whose curves are drawn."""
    out = Replay()
    kept = ("alloc", "free_completed", "oom")
    events = [e for e in trace if e.get("action") in kept]
    out.events = len(events) - sum(1 for e in events if e["action"] == "oom")
    if not events:
        return out
    out.timed = all(type(t) is int and t >= 0 for t in (e.get("time_us") for e in events))
    t0 = _time(events[0], 0, out.timed)
    out.first_s, out.span_s = t0, max(0.0, _time(events[-1], len(events) - 1, out.timed) - t0)
    p = _Pass(lines, drawn, t0, out.span_s, out.timed)
    p.run(events)
    offset = end_live - p.live
    out.oom, out.end_by_key = p.oom, dict(p.by_key)
    lows = [low for low in p.lows if low is not None]
    if len(lows) >= 3 and out.span_s > 0:  # (enough slices for a trough line)
        rise = _fit([(t, float(v)) for t, v, _ in lows]) * (lows[-1][0] - lows[0][0])
        out.growth = Growth(
            source="history",
            t_s=[round(t, 3) for t, _, _ in lows],
            trough_bytes=[v + offset for _, v, _ in lows],
            grown_bytes=int(rise),
            span_s=round(out.span_s, 3),
            freed_bytes=p.freed,
        )
        start = _by_key_until(events, lines, lows[0][2])
        out.growth_by_key = {k: v - start.get(k, 0) for k, v in p.by_key.items() if v - start.get(k, 0) > 0}
    line_offset = [end_by_line.get(k, 0) - p.by_key.get(k, 0) for k in drawn]
    order = sorted(p.bins)
    out.series = LiveSeries(
        t_s=[round(p.bins[b][0], 4) for b in order],
        total_bytes=[p.bins[b][1] + offset for b in order],
        lines=[f"{k[0]}:{k[1]}" if k[1] > 0 else k[0] for k in drawn],
        by_line=[[p.bins[b][2][j] + line_offset[j] for b in order] for j in range(len(drawn))],
        events=out.events,
        span_s=round(out.span_s, 3),
    )
    return out
