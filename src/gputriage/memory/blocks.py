"""The allocator's blocks at the moment of a snapshot: what tensors hold, by the Python line that allocated them;
what the cache holds free, and how fragmented it is (pytorch#29554: 1 - largest free block / free cached bytes,
and allocated / reserved); the map of its segments."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gputriage.memory.frames import Key, Lines
from gputriage.memory.snapshot import FREE, LIVE, PENDING, Snapshot, number
from gputriage.model.memory import MemoryLine, SegmentMap

SMALL_REQUEST = 1 << 20  # requests up to 1 MiB are served from the small pool (2 MiB segments), larger from the large
MAP_SEGMENTS = 48  # segments drawn in the map, the largest
MAP_BLOCKS = 400  # entries per segment drawn (runs of one state and line merged first)


@dataclass
class LineTotal:
    bytes: int = 0
    blocks: int = 0
    requested: int = 0
    own: bool = True
    via: str | None = None


@dataclass
class Blocks:
    """The figures of one device's segments."""

    reserved: int = 0
    allocated: int = 0
    pending: int = 0
    free_by_pool: dict[str, int] = field(default_factory=dict)  # free cached bytes per pool
    largest_by_pool: dict[str, int] = field(default_factory=dict)
    segments: int = 0
    blocks: int = 0
    expandable: bool | None = None
    stacked_blocks: int = 0  # live blocks that carry frames
    unstacked: int = 0  # live bytes without frames
    lines: dict[Key, LineTotal] = field(default_factory=dict)
    own: list[dict[str, Any]] = field(default_factory=list)  # this device's segments

    @property
    def cached_free(self) -> int:
        return sum(self.free_by_pool.values())


def pool_of(segment: dict[str, Any]) -> str:
    kind = segment.get("segment_type")
    return kind if kind in ("large", "small") else "large"


def read_blocks(snap: Snapshot, device: int, lines: Lines) -> Blocks:
    """One pass over the device's segments."""
    out = Blocks()
    for seg in snap.segments:
        if number(seg.get("device"), 0) != device:
            continue
        out.own.append(seg)
        out.segments += 1
        out.reserved += number(seg.get("total_size"))
        pool = pool_of(seg)
        if seg.get("is_expandable") is True:
            out.expandable = True
        elif out.expandable is None and seg.get("is_expandable") is False:
            out.expandable = False
        for b in seg["blocks"]:
            if not isinstance(b, dict):
                continue
            size = number(b.get("size"))
            state = b.get("state")
            out.blocks += 1
            if state == LIVE:
                out.allocated += size
                frames = b.get("frames")
                key, own, via = lines.of(frames)
                if frames:
                    out.stacked_blocks += 1
                else:
                    out.unstacked += size
                t = out.lines.get(key)
                if t is None:
                    t = out.lines[key] = LineTotal(own=own, via=via)
                t.bytes += size
                t.blocks += 1
                t.requested += number(b.get("requested_size"), size)
            elif state in PENDING:
                out.pending += size
            elif state == FREE:
                out.free_by_pool[pool] = out.free_by_pool.get(pool, 0) + size
                if size > out.largest_by_pool.get(pool, 0):
                    out.largest_by_pool[pool] = size
    return out


def request_pool(requested: int | None) -> str:
    return "small" if requested is not None and requested <= SMALL_REQUEST else "large"


def fragmentation(free: int, largest: int) -> float | None:
    """1 - largest free block / free cached bytes (0: one block; near 1: many small pieces); None without free."""
    return round(1.0 - largest / free, 4) if free > 0 else None


def top_lines(totals: dict[Key, LineTotal], n: int) -> list[MemoryLine]:
    """The lines holding the most live bytes."""
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1].bytes, kv[0]))[:n]
    return [
        MemoryLine(
            file=k[0],
            line=k[1],
            function=k[2],
            bytes=t.bytes,
            blocks=t.blocks,
            own=t.own,
            via=t.via,
            requested_bytes=t.requested if t.requested != t.bytes else None,
        )
        for k, t in ranked
    ]


def segment_map(blocks: Blocks, lines: Lines, top: list[Key]) -> list[SegmentMap]:
    """The largest segments, each block as (bytes, state, index of its line among `top`)."""
    index = {k: i for i, k in enumerate(top)}
    out = []
    for seg in sorted(blocks.own, key=lambda s: -number(s.get("total_size")))[:MAP_SEGMENTS]:
        runs: list[list[int]] = []
        count = 0
        for b in seg["blocks"]:
            if not isinstance(b, dict):
                continue
            count += 1
            state = b.get("state")
            code = 1 if state == LIVE else 2 if state in PENDING else 0
            line = index.get(lines.of(b.get("frames"))[0], -1) if code == 1 else -1
            size = number(b.get("size"))
            if runs and runs[-1][1] == code and runs[-1][2] == line:
                runs[-1][0] += size
            else:
                runs.append([size, code, line])
        if len(runs) > MAP_BLOCKS:  # the rest as one entry of its largest state
            rest = runs[MAP_BLOCKS - 1 :]
            runs = runs[: MAP_BLOCKS - 1] + [[sum(r[0] for r in rest), max(rest, key=lambda r: r[0])[1], -1]]
        out.append(
            SegmentMap(
                address=number(seg.get("address")),
                total_bytes=number(seg.get("total_size")),
                pool=pool_of(seg),
                stream=number(seg.get("stream")),
                expandable=seg.get("is_expandable") is True,
                blocks=[(r[0], r[1], r[2]) for r in runs],
                merged_blocks=count - len(runs),
            )
        )
    return out
