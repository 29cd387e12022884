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
GROWTH_DRAWN = 3  # lines that grew most, drawn beside the largest


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


def replay(
    trace: list[dict[str, Any]], lines: Lines, end_live: int, end_by_line: dict[Key, int], drawn: list[Key]
) -> Replay:
    """Replay a device's events. `end_live`, `end_by_line`: the live bytes the snapshot shows at the end, in all and
    by line, which the replay's curves are offset to meet; `drawn`: the lines whose curves are drawn (with those
    that grew most)."""
    out = Replay()
    events = [e for e in trace if e.get("action") in ("alloc", "free_completed", "oom")]
    out.events = sum(1 for e in events if e["action"] != "oom")
    if not events:
        return out
    out.timed = all(isinstance(e.get("time_us"), int) for e in events)
    t0 = _time(events[0], 0, out.timed)
    t1 = _time(events[-1], len(events) - 1, out.timed)
    out.first_s, out.span_s = t0, max(0.0, t1 - t0)
    live, by_key, seen, freed = _first_pass(events, lines, out)
    offset = end_live - live
    out.growth = troughs(((_time(e, i, out.timed), v + offset) for i, (e, v) in enumerate(seen)), "history")
    if out.growth is not None:
        out.growth.freed_bytes = freed
    out.end_by_key = dict(by_key)
    if out.growth is not None:
        at = out.growth.t_s[0] + t0
        start = _by_key_at(events, lines, lambda i, e: _time(e, i, out.timed) > at)
        out.growth_by_key = {k: v - start.get(k, 0) for k, v in by_key.items() if v - start.get(k, 0) > 0}
    grew = sorted(out.growth_by_key, key=lambda k: -out.growth_by_key[k])[:GROWTH_DRAWN]
    keys = drawn + [k for k in grew if k not in drawn]
    out.series = _series(events, lines, out, offset, {k: end_by_line.get(k, 0) for k in keys})
    return out


def _first_pass(
    events: list[dict[str, Any]], lines: Lines, out: Replay
) -> tuple[int, dict[Key, int], list[tuple[dict[str, Any], int]], int]:
    """Live bytes after each event, by line at the end, and the bytes freed."""
    live = freed = 0
    by_key: dict[Key, int] = {}
    blocks: dict[int, tuple[int, Key]] = {}
    seen = []
    for i, e in enumerate(events):
        action = e["action"]
        if action == "oom":
            out.oom = _oom(e, _time(e, i, True) if out.timed else None)
            continue
        addr, size = number(e.get("addr"), -1), number(e.get("size"))
        if action == "alloc":
            key = lines.of(e.get("frames"))[0]
            blocks[addr] = (size, key)
            live += size
            by_key[key] = by_key.get(key, 0) + size
        else:
            known = blocks.pop(addr, None)
            live -= known[0] if known is not None else size
            freed += known[0] if known is not None else size
            if known is not None:
                by_key[known[1]] -= known[0]
        seen.append((e, live))
    return live, by_key, seen, freed


def _by_key_at(events: list[dict[str, Any]], lines: Lines, stop: Any) -> dict[Key, int]:
    """Live bytes by line (seen ones only) just before the first event for which `stop(i, e)` holds."""
    by_key: dict[Key, int] = {}
    blocks: dict[int, tuple[int, Key]] = {}
    for i, e in enumerate(events):
        if stop(i, e):
            break
        action = e["action"]
        if action == "alloc":
            key = lines.of(e.get("frames"))[0]
            size = number(e.get("size"))
            blocks[number(e.get("addr"), -1)] = (size, key)
            by_key[key] = by_key.get(key, 0) + size
        elif action == "free_completed":
            known = blocks.pop(number(e.get("addr"), -1), None)
            if known is not None:
                by_key[known[1]] -= known[0]
    return by_key


def _series(
    events: list[dict[str, Any]], lines: Lines, out: Replay, offset: int, end_by_line: dict[Key, int]
) -> LiveSeries:
    """The drawn series: the highest live bytes of each of `POINTS` bins, with each drawn line's bytes then."""
    drawn = list(end_by_line)
    index = {k: i for i, k in enumerate(drawn)}
    line_offset = [end_by_line[k] - out.end_by_key.get(k, 0) for k in drawn]
    span = out.span_s or 1.0
    t0 = out.first_s
    live = 0
    per = [0] * len(drawn)
    blocks: dict[int, tuple[int, int]] = {}
    bins: dict[int, tuple[float, int, list[int]]] = {}
    for i, e in enumerate(events):
        action = e["action"]
        if action == "oom":
            continue
        addr, size = number(e.get("addr"), -1), number(e.get("size"))
        if action == "alloc":
            j = index.get(lines.of(e.get("frames"))[0], -1)
            blocks[addr] = (size, j)
            live += size
            if j >= 0:
                per[j] += size
        else:
            known = blocks.pop(addr, None)
            live -= known[0] if known is not None else size
            if known is not None and known[1] >= 0:
                per[known[1]] -= known[0]
        t = _time(e, i, out.timed) - t0
        b = min(POINTS - 1, int(t / span * POINTS))
        if b not in bins or live > bins[b][1]:
            bins[b] = (t, live, list(per))
    order = sorted(bins)
    return LiveSeries(
        t_s=[round(bins[b][0], 4) for b in order],
        total_bytes=[bins[b][1] + offset for b in order],
        lines=[f"{k[0]}:{k[1]}" if k[1] > 0 else k[0] for k in drawn],
        by_line=[[bins[b][2][j] + line_offset[j] for b in order] for j in range(len(drawn))],
        events=out.events,
        span_s=round(out.span_s, 3),
    )
