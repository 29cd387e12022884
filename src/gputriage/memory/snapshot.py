"""An allocator snapshot as `torch.cuda.memory._snapshot()` returns it and `_dump_snapshot()` pickles it (the
format of torch/cuda/memory.py's docstring, which torch/cuda/_memory_viz.py reads):

    {"segments": [{"device", "address", "total_size", "allocated_size", "active_size", "requested_size", "stream",
                   "segment_type": "large"|"small", "segment_pool_id", "is_expandable", "frames",
                   "blocks": [{"address", "size", "requested_size",
                               "state": "active_allocated"|"active_pending_free"|"inactive", "frames"}]}],
     "device_traces": [[{"action": "alloc"|"free_requested"|"free_completed"|"segment_alloc"|"segment_free"|
                                   "segment_map"|"segment_unmap"|"oom"|"snapshot",
                         "addr" (or "device_free" for an oom), "size", "stream", "time_us", "frames"}]],  # per device
     "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments", ...}}

with frames `{"filename", "line", "name"}` innermost first. An older snapshot is the list of segments alone. Only
the shape is checked here; each field is checked where it is read (a field of the wrong type counts as absent)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gputriage.memory.safe_pickle import SnapshotError, read_plain

LIVE = "active_allocated"
PENDING = ("active_pending_free", "active_awaiting_free")  # freed, the memory awaiting another stream's work
FREE = "inactive"


@dataclass
class Snapshot:
    segments: list[dict[str, Any]]
    traces: list[list[dict[str, Any]]] = field(default_factory=list)  # per device index
    settings: dict[str, Any] = field(default_factory=dict)

    def devices(self) -> list[int]:
        """The devices that have segments or recorded events."""
        found = {number(s.get("device"), 0) for s in self.segments}
        found |= {i for i, t in enumerate(self.traces) if t}
        return sorted(found)

    def trace(self, device: int) -> list[dict[str, Any]]:
        return self.traces[device] if 0 <= device < len(self.traces) else []


def number(value: Any, default: int = 0) -> int:
    """An int field (sizes, addresses, devices, times: none negative), or `default` where it is absent, not an int,
    or negative."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def parse(obj: Any, what: str = "the file") -> Snapshot:
    """The snapshot a plain value holds; SnapshotError when it is not one."""
    if isinstance(obj, list):  # a snapshot of the segments alone (before traces were kept)
        obj = {"segments": obj}
    if not isinstance(obj, dict) or not isinstance(obj.get("segments"), list):
        raise SnapshotError(
            f"{what}: not an allocator snapshot (no list of segments; torch.cuda.memory._dump_snapshot() writes one)"
        )
    segments = [s for s in obj["segments"] if isinstance(s, dict) and isinstance(s.get("blocks"), list)]
    raw = obj.get("device_traces")
    traces = (
        [[e for e in t if isinstance(e, dict)] if isinstance(t, list) else [] for t in raw]
        if isinstance(raw, list)
        else []
    )
    settings = obj.get("allocator_settings")
    return Snapshot(segments, traces, settings if isinstance(settings, dict) else {})


def read(path: str | Path, bounded: bool = False) -> Snapshot:
    """A snapshot file (gzip or not), read as plain data only (`safe_pickle`)."""
    return parse(read_plain(path, bounded=bounded), str(path))
