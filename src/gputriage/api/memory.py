"""`analyze_memory`: read an allocator snapshot (the pickle `torch.cuda.memory._dump_snapshot()` writes, or one
`run` saved at an out-of-memory error) and judge it."""

from __future__ import annotations

from pathlib import Path

from gputriage.api._common import GputriageError, UsageError
from gputriage.diagnosis.memory.judge import judge_snapshot
from gputriage.diagnosis.verify import Context
from gputriage.inworkload.memory_history import MARK, PICKLE
from gputriage.memory.safe_pickle import RefusedPickle, SnapshotError
from gputriage.memory.snapshot import read
from gputriage.model.memory import MemoryDump, MemoryReport
from gputriage.sampling.oom_marks import dump_of


class RefusedSnapshot(GputriageError):
    """A pickle that would construct something other than plain data: refused, nothing of it run."""


def marker_of(path: Path) -> MemoryDump | None:
    """What `run` wrote beside a snapshot it saved (the size that failed, the capacity, the stack, the processes)."""
    name = path.name.removesuffix(".gz")  # a snapshot gzipped to keep (its marker beside it is not)
    marker = path.with_name(name.removesuffix(PICKLE) + MARK)
    return dump_of(marker) if marker.exists() else None


def analyze_memory(path: str | Path, device: int | None = None, bounded: bool = False) -> MemoryReport:
    """The verdict on an allocator snapshot: the kind of its out-of-memory error, the lines that filled the GPU.
    `bounded`: the read within an address-space limit (a command's process: `gputriage memory`). RefusedSnapshot
    for a pickle that is not plain data, GputriageError for a file that is no snapshot, UsageError for a device the
    snapshot does not have."""
    p = Path(path)
    try:
        snap = read(p, bounded=bounded)
    except RefusedPickle as exc:
        raise RefusedSnapshot(str(exc)) from None
    except SnapshotError as exc:
        raise GputriageError(str(exc)) from None
    if device is not None and snap.devices() and device not in snap.devices():
        have = ", ".join(str(d) for d in snap.devices())
        raise UsageError(f"{p}: no device {device} in this snapshot (it has {have})")
    return judge_snapshot(snap, str(p), device, marker_of(p), context=Context("memory"))
