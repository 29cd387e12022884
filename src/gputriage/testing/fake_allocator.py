"""A model of PyTorch's CUDA caching allocator that writes snapshots in the format `torch.cuda.memory._snapshot()`
documents (torch/cuda/memory.py, read by torch/cuda/_memory_viz.py): for tests and built fixtures where no GPU
recorded one. It keeps what decides the cases the memory judge tells apart: sizes rounded to 512 bytes, a small
pool (requests up to 1 MiB, 2 MiB segments) and a large one (20 MiB segments for requests under 10 MiB, else the
request rounded to 2 MiB), best-fit reuse of free blocks with splitting, neighbours merged when freed, the cache
released (whole free segments) and the request retried before an out-of-memory error, and the history ring of
alloc and free events with their stacks, recorded from when it is armed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

MIN_BLOCK = 512
SMALL = 1 << 20
SMALL_BUFFER = 2 << 20
LARGE_BUFFER = 20 << 20
MIN_LARGE_ALLOC = 10 << 20
ROUND_LARGE = 2 << 20
BASE_ADDRESS = 0x7F0000000000


@dataclass
class Block:
    address: int
    size: int
    requested: int = 0
    state: str = "inactive"
    frames: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Segment:
    address: int
    size: int
    pool: str
    blocks: list[Block]
    stream: int = 0


class OutOfMemory(Exception):
    def __init__(self, requested: int, device_free: int) -> None:
        super().__init__(f"out of memory: {requested} asked, {device_free} free")
        self.requested, self.device_free = requested, device_free


def round_size(n: int) -> int:
    return MIN_BLOCK if n < MIN_BLOCK else (n + MIN_BLOCK - 1) // MIN_BLOCK * MIN_BLOCK


def segment_size(n: int) -> int:
    if n <= SMALL:
        return SMALL_BUFFER
    if n < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return (n + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE


class FakeAllocator:
    """One device's caching allocator. `held_elsewhere`: bytes of the device this allocator cannot have (the CUDA
    context, other processes)."""

    def __init__(self, capacity: int, held_elsewhere: int = 0, device: int = 0, t0_us: int = 1_700_000_000_000_000):
        self.capacity, self.held_elsewhere, self.device = capacity, held_elsewhere, device
        self.segments: list[Segment] = []
        self.trace: list[dict[str, Any]] = []
        self.recording = False
        self.max_entries = 0
        self.now_us = t0_us
        self._next_address = BASE_ADDRESS

    # --- history -------------------------------------------------------------------------------------------------
    def record(self, max_entries: int = 20_000) -> None:
        """Arm the history: stacks on the blocks allocated from now, and the ring of events."""
        self.recording, self.max_entries = True, max_entries

    def tick(self, us: int) -> None:
        self.now_us += us

    def _event(
        self,
        action: str,
        size: int,
        addr: Optional[int] = None,
        free: Optional[int] = None,
        frames: Optional[list[dict[str, Any]]] = None,
    ) -> None:
        if not self.recording:
            return
        e: dict[str, Any] = {"action": action, "size": size, "stream": 0, "time_us": self.now_us}
        e["device_free" if action == "oom" else "addr"] = free if action == "oom" else addr
        e["frames"] = frames if frames is not None else []
        self.trace.append(e)
        if len(self.trace) > self.max_entries:
            del self.trace[0]

    # --- the allocator -------------------------------------------------------------------------------------------
    @property
    def reserved(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def device_free(self) -> int:
        return self.capacity - self.held_elsewhere - self.reserved

    def _best_fit(self, size: int, pool: str) -> tuple[Segment, int] | None:
        best = None
        for seg in self.segments:
            if seg.pool != pool:
                continue
            for i, b in enumerate(seg.blocks):
                if b.state == "inactive" and b.size >= size and (best is None or b.size < best[0].blocks[best[1]].size):
                    best = (seg, i)
        return best

    def _release_cache(self) -> None:
        for seg in [s for s in self.segments if all(b.state == "inactive" for b in s.blocks)]:
            self.segments.remove(seg)
            self._event("segment_free", seg.size, seg.address)

    def _new_segment(self, size: int, pool: str) -> tuple[Segment, int] | None:
        seg_bytes = segment_size(size)
        if seg_bytes > self.device_free:
            return None
        seg = Segment(self._next_address, seg_bytes, pool, [Block(self._next_address, seg_bytes)])
        self._next_address += seg_bytes + (1 << 30)  # address ranges apart, as cudaMalloc gives them
        self.segments.append(seg)
        self._event("segment_alloc", seg_bytes, seg.address)
        return seg, 0

    def malloc(self, nbytes: int, frames: Optional[list[dict[str, Any]]] = None) -> int:
        """The address of a new block; OutOfMemory (an "oom" event recorded) when none can be had."""
        size = round_size(nbytes)
        pool = "small" if size <= SMALL else "large"
        found = self._best_fit(size, pool) or self._new_segment(size, pool)
        if found is None:
            self._release_cache()
            found = self._new_segment(size, pool)
        if found is None:
            self._event("oom", size, free=self.device_free, frames=frames if self.recording else [])
            raise OutOfMemory(size, self.device_free)
        seg, i = found
        b = seg.blocks[i]
        rest = b.size - size
        if rest >= (MIN_BLOCK if pool == "small" else SMALL + 1):
            seg.blocks.insert(i + 1, Block(b.address + size, rest))
            b.size = size
        b.state, b.requested = "active_allocated", nbytes
        b.frames = (frames or []) if self.recording else []
        self._event("alloc", b.size, b.address, frames=frames or [])
        return b.address

    def free(self, address: int) -> None:
        for seg in self.segments:
            for i, b in enumerate(seg.blocks):
                if b.address == address and b.state == "active_allocated":
                    self._event("free_requested", b.size, b.address)
                    self._event("free_completed", b.size, b.address)
                    b.state, b.frames, b.requested = "inactive", [], 0
                    self._merge(seg, i)
                    return
        raise KeyError(hex(address))

    @staticmethod
    def _merge(seg: Segment, i: int) -> None:
        blocks = seg.blocks
        if i + 1 < len(blocks) and blocks[i + 1].state == "inactive":
            blocks[i].size += blocks.pop(i + 1).size
        if i > 0 and blocks[i - 1].state == "inactive":
            blocks[i - 1].size += blocks.pop(i).size

    def snapshot(self, devices: int = 1) -> dict[str, Any]:
        """The snapshot, as `torch.cuda.memory._snapshot()` returns it."""
        segments = []
        for seg in sorted(self.segments, key=lambda s: s.address):
            blocks: list[dict[str, Any]] = [
                {
                    "address": b.address,
                    "size": b.size,
                    "requested_size": b.requested if b.state != "inactive" else 0,
                    "state": b.state,
                    "frames": b.frames,
                }
                for b in seg.blocks
            ]
            live = sum(b.size for b in seg.blocks if b.state == "active_allocated")
            segments.append(
                {
                    "device": self.device,
                    "address": seg.address,
                    "total_size": seg.size,
                    "allocated_size": live,
                    "active_size": live,
                    "requested_size": sum(b["requested_size"] for b in blocks),
                    "stream": seg.stream,
                    "segment_type": seg.pool,
                    "segment_pool_id": (0, 0),
                    "is_expandable": False,
                    "frames": [],
                    "blocks": blocks,
                }
            )
        traces: list[list[dict[str, Any]]] = [[] for _ in range(max(devices, self.device + 1))]
        traces[self.device] = list(self.trace)
        return {
            "segments": segments,
            "device_traces": traces,
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "expandable_segments": False},
        }
