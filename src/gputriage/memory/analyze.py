"""One device's allocator from a snapshot: the figures, the top lines, the growth, the out-of-memory error with the
stack that asked and its phase, and the processes on the GPU then (`MemoryState`, what the memory judge reads)."""

from __future__ import annotations

from gputriage.memory.blocks import fragmentation, read_blocks, request_pool, segment_map, top_lines
from gputriage.memory.frames import Key, Lines, attribute, phase
from gputriage.memory.history import Replay, replay, troughs
from gputriage.memory.safe_pickle import no_gc
from gputriage.memory.snapshot import Snapshot, number
from gputriage.model.memory import Frame, MemoryDump, MemoryLine, MemoryState, OomEvent, ProcessMemory

TOP_LINES = 10  # lines listed
DRAWN_LINES = 6  # lines drawn over time
GROWTH_LINES = 5


def device_of(snap: Snapshot, dump: MemoryDump | None, device: int | None) -> int:
    """The device asked for; else the one that ran out of memory; else the one whose allocator holds the most."""
    if device is not None:
        return device
    if dump is not None and dump.device is not None:
        return dump.device
    for i, trace in enumerate(snap.traces):
        if any(e.get("action") == "oom" for e in trace):
            return i
    held: dict[int, int] = {}
    for s in snap.segments:
        d = number(s.get("device"))
        held[d] = held.get(d, 0) + number(s.get("total_size"))
    return max(held, key=lambda d: held[d]) if held else 0


def _oom(dump: MemoryDump | None, rep: Replay) -> OomEvent | None:
    """The error: as the workload's observer saw it where it saved the snapshot, else as the history recorded it."""
    mine = dump if dump is not None and dump.kind == "oom" else None
    seen = rep.oom
    if mine is None and seen is None:
        return None
    requested = (mine.requested_bytes if mine else None) or (seen.requested if seen else 0)
    free = mine.device_free_bytes if mine and mine.device_free_bytes is not None else seen.device_free if seen else None
    stack: list[Frame] = list(mine.stack) if mine and mine.stack else seen.stack if seen else []
    (file, line, function), _, _ = attribute(stack)
    return OomEvent(
        requested_bytes=int(requested or 0),
        device_free_bytes=free,
        capacity_bytes=mine.capacity_bytes if mine else None,
        t_s=mine.t_s if mine and mine.t_s is not None else seen.t_s if seen else None,
        stack=stack,
        line=f"{file}:{line}" if line > 0 else None,
        function=function or None,
        phase=phase(stack) if stack else None,
    )


def _growth_lines(rep: Replay, ends: dict[Key, int], blocks: dict[Key, int]) -> list[MemoryLine]:
    grew = sorted(rep.growth_by_key.items(), key=lambda kv: (-kv[1], kv[0]))[:GROWTH_LINES]
    return [
        MemoryLine(file=k[0], line=k[1], function=k[2], bytes=ends.get(k, 0), blocks=blocks.get(k, 0), growth_bytes=g)
        for k, g in grew
    ]


def analyze(
    snap: Snapshot,
    device: int | None = None,
    dump: MemoryDump | None = None,
    samples: list[tuple[float, float]] | None = None,
    processes: list[ProcessMemory] | None = None,
) -> MemoryState:
    """The allocator of one device. `dump`: what the workload's observer said of the moment (the size asked, the
    capacity, the stack, the processes the sampler read); `samples`: (unix s, live bytes) the run's sampler read,
    a longer view of the growth than the recorded history; `processes`: on the GPU at the error, with their
    names and pods (they replace the dump's)."""
    with no_gc():
        return _analyze(snap, device, dump, samples, processes)


def _analyze(
    snap: Snapshot,
    device: int | None,
    dump: MemoryDump | None,
    samples: list[tuple[float, float]] | None,
    processes: list[ProcessMemory] | None,
) -> MemoryState:
    dev = device_of(snap, dump, device)
    lines = Lines()
    b = read_blocks(snap, dev, lines)
    top = top_lines(b.lines, TOP_LINES)
    ends = {k: t.bytes for k, t in b.lines.items()}
    drawn = [(ln.file, ln.line, ln.function) for ln in top[:DRAWN_LINES]]
    rep = replay(snap.trace(dev), lines, b.allocated, ends, drawn)
    oom = _oom(dump, rep)
    pool = request_pool(oom.requested_bytes if oom else None)
    free, largest = b.free_by_pool.get(pool, 0), b.largest_by_pool.get(pool, 0)
    growth = rep.growth
    if samples:
        sampled = troughs(samples, "samples")
        if sampled is not None and (growth is None or sampled.span_s > growth.span_s):
            growth = sampled
    grown = {(g.file, g.line, g.function): g.growth_bytes for g in _growth_lines(rep, ends, {})}
    for ln in top:
        ln.growth_bytes = grown.get((ln.file, ln.line, ln.function))
    procs = processes if processes is not None else dump.processes if dump is not None else None
    settings = snap.settings.get("PYTORCH_CUDA_ALLOC_CONF")
    return MemoryState(
        device=dev,
        reserved_bytes=b.reserved,
        allocated_bytes=b.allocated,
        pending_free_bytes=b.pending,
        cached_free_bytes=free,
        largest_free_bytes=largest,
        fragmentation=fragmentation(free, largest),
        allocated_share=round(b.allocated / b.reserved, 4) if b.reserved else None,
        segments=b.segments,
        blocks=b.blocks,
        expandable_segments=b.expandable,
        allocator_settings=settings if isinstance(settings, str) else "",
        stacks=b.stacked_blocks > 0,
        unstacked_bytes=b.unstacked,
        top_lines=top,
        growth_lines=_growth_lines(rep, ends, {k: t.blocks for k, t in b.lines.items()}),
        growth=growth,
        series=rep.series if rep.events else None,
        segment_map=segment_map(b, lines, [(ln.file, ln.line, ln.function) for ln in top]),
        oom=oom,
        processes=list(procs or []),
        other_processes_bytes=sum(p.used_bytes or 0 for p in procs if not p.own) if procs is not None else None,
        capacity_bytes=oom.capacity_bytes if oom else dump.capacity_bytes if dump else None,
    )
