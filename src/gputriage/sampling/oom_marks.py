"""The allocator snapshots a Python workload saved in `run`'s progress folder (`inworkload.memory_history`): the
processes on the GPUs recorded beside each out-of-memory marker when the sampler first sees it, and the files kept
where the run's report can name them once the folder is gone.

The workload cannot read NVML itself (it would load gputriage's dependencies into someone else's process), and its
observer must not wait: it writes its marker and lets the error go. The sampler lists the folder at every sample;
a new marker makes it read NVML's per-process memory at once, outside its usual cadence, and write what it read
beside the marker (`PREFIX.PID.processes.json`) — within one sample period of the error, the processes that held
the GPU then. The moment CUDA itself saw (free bytes, capacity) is in the marker."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import msgspec

from gputriage.inworkload import memory_history as mh
from gputriage.model.memory import Frame, MemoryDump, ProcessMemory
from gputriage.model.sample import GpuProcess

KINDS = {mh.OOM_PREFIX: "oom", mh.GROWTH_PREFIX: "growth"}


class OomMarks:
    """The out-of-memory markers of a folder, each reported once."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = str(folder)
        self._seen: dict[str, int] = {}  # marker -> its mtime when last reported

    def fresh(self, names: list[str]) -> list[str]:
        """Markers new or rewritten since the last call (from one listing of the folder)."""
        out = []
        for n in names:
            if not (n.startswith(mh.OOM_PREFIX) and n.endswith(mh.MARK)) or n.endswith(mh.PROCESSES):
                continue
            try:
                changed = os.stat(os.path.join(self.folder, n)).st_mtime_ns
            except OSError:
                continue
            if self._seen.get(n) != changed:
                self._seen[n] = changed
                out.append(n)
        return out

    def record_processes(self, marker: str, t_s: float, others: list[GpuProcess], job: list[GpuProcess]) -> None:
        """What NVML said each process held on the GPUs, just read, beside the marker."""
        rows = [{"own": False, **msgspec.to_builtins(p)} for p in others]
        rows += [{"own": True, **msgspec.to_builtins(p)} for p in job]
        base = marker[: -len(mh.MARK)]
        path = os.path.join(self.folder, base + mh.PROCESSES)
        tmp = path + ".tmp"
        try:
            with open(tmp, "w") as fh:
                json.dump({"t_s": t_s, "processes": rows}, fh)
            os.replace(tmp, path)
        except OSError:
            pass


def _frames(raw: Any) -> list[Frame]:
    out = []
    for f in raw if isinstance(raw, list) else []:
        try:
            out.append(Frame(str(f[0]), int(f[1]), str(f[2])))
        except (IndexError, TypeError, ValueError):
            continue
    return out


def _processes(path: Path, device: int | None) -> list[ProcessMemory] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    out = []
    for row in data.get("processes", []) if isinstance(data, dict) else []:
        if not isinstance(row, dict) or not isinstance(row.get("pid"), int):
            continue
        if device is not None and row.get("gpu") not in (None, device):
            continue
        used = row.get("used_bytes")
        out.append(
            ProcessMemory(pid=row["pid"], used_bytes=used if isinstance(used, int) else None, own=bool(row.get("own")))
        )
    return out


def _number(mark: dict[str, Any], key: str) -> Any:
    v = mark.get(key)
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def dump_of(marker: Path) -> MemoryDump | None:
    """The dump a marker describes (its pickle beside it), or None for a marker half-written or without one. Its
    kind is in its name's prefix; a marker renamed with its snapshot is an error's where it says what failed."""
    prefix = next((p for p in KINDS if marker.name.startswith(p)), None)
    pickle_path = marker.with_name(marker.name[: -len(mh.MARK)] + mh.PICKLE)
    if not pickle_path.exists():  # kept gzipped (a fixture)
        pickle_path = pickle_path.with_name(pickle_path.name + ".gz")
    if not marker.name.endswith(mh.MARK) or not pickle_path.exists():
        return None
    try:
        mark = json.loads(marker.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(mark, dict) or not isinstance(mark.get("pid"), int):
        return None
    device = _number(mark, "device")
    processes = marker.with_name(marker.name[: -len(mh.MARK)] + mh.PROCESSES)
    return MemoryDump(
        kind=KINDS[prefix] if prefix is not None else "oom" if "requested_bytes" in mark else "growth",
        pid=mark["pid"],
        snapshot=str(pickle_path),
        t_s=_number(mark, "t_s"),
        device=int(device) if device is not None else None,
        requested_bytes=_number(mark, "requested_bytes"),
        capacity_bytes=_number(mark, "capacity_bytes"),
        device_free_bytes=_number(mark, "device_free_bytes"),
        stack=_frames(mark.get("stack")),
        history=str(mark.get("history", "")),
        processes=_processes(processes, int(device) if device is not None else None) if processes.exists() else None,
    )


def dumps(folder: str | Path) -> list[MemoryDump]:
    """Every dump in a folder: the out-of-memory ones first, then by time."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    found = [
        dump_of(Path(folder, n))
        for n in names
        if n.endswith(mh.MARK) and not n.endswith(mh.PROCESSES) and any(n.startswith(p) for p in KINDS)
    ]
    return sorted((d for d in found if d is not None), key=lambda d: (d.kind != "oom", d.t_s or 0.0))


def kept_folder(store_path: Path | None, run_id: int | None) -> Path:
    """Where a run's snapshots are kept: beside its run store (`memory/run-ID`), else in the user's cache."""
    if store_path is not None:
        return store_path.parent / "memory" / (f"run-{run_id}" if run_id is not None else f"pid-{os.getpid()}")
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("gputriage")) / "memory" / f"pid-{os.getpid()}-{int(time.time())}"


def keep(folder: str | Path, dest: str | Path) -> list[MemoryDump]:
    """The dumps of `folder` moved into `dest` (created), with the paths they have there: the progress folder is
    removed when the run ends, the snapshots stay for `gputriage memory FILE` and memory_viz."""
    found = dumps(folder)
    if not found:
        return []
    target = Path(dest)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError:
        return found
    out = []
    for d in found:
        src = Path(d.snapshot)
        moved = target / src.name
        try:
            for suffix in (mh.PICKLE, mh.MARK, mh.PROCESSES):
                f = src.with_name(src.name[: -len(mh.PICKLE)] + suffix)
                if f.exists():
                    shutil.move(str(f), str(target / f.name))
        except OSError:
            out.append(d)
            continue
        out.append(msgspec.structs.replace(d, snapshot=str(moved)))
    return out
