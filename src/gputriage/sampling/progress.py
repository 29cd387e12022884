"""Read what a workload reports from inside: the step counters of `gputriage.step()`
(`gputriage.inworkload.progress`) and the CUDA caching allocator's counters (`gputriage.inworkload.allocator_counters`),
per-process files in the folder `run` gave it, each summed over the processes. Files are mapped once
and re-listed each read (a new rank, a forked worker); a process that ended leaves its counts, which
stay counted."""

from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import Any

from gputriage.inworkload import allocator_counters, progress

SUMMED = ("retries", "cuda_mallocs", "cuda_frees", "ooms", "reserved_bytes", "allocated_bytes")  # over processes


class _Mapped:
    """The float64 views of every file of one kind (`prefix`) in the folder."""

    def __init__(self, folder: str, prefix: str, nbytes: int) -> None:
        self.folder, self.prefix, self.nbytes = folder, prefix, nbytes
        self.views: dict[str, Any] = {}

    def refresh(self, names: list[str]) -> list[Any]:
        for n in names:
            if n.startswith(self.prefix) and n not in self.views:
                try:
                    with open(os.path.join(self.folder, n), "rb") as fh:
                        if os.fstat(fh.fileno()).st_size < self.nbytes:
                            continue  # still being created
                        self.views[n] = memoryview(mmap.mmap(fh.fileno(), self.nbytes,
                                                             access=mmap.ACCESS_READ)).cast("d")
                except (OSError, ValueError):
                    continue
        return list(self.views.values())


class ProgressReader:
    def __init__(self, folder: str | Path) -> None:
        self.folder = str(folder)
        self._steps = _Mapped(self.folder, progress.PREFIX, progress.FILE_BYTES)
        self._allocator = _Mapped(self.folder, allocator_counters.PREFIX, allocator_counters.FILE_BYTES)

    def read(self) -> tuple[tuple[float, float, float] | None, dict[str, float] | None]:
        """`totals()` and `allocator()` from one listing of the folder (what the sampler reads each sample)."""
        try:
            names = os.listdir(self.folder)
        except OSError:
            names = []
        return self._totals(self._steps.refresh(names)), self._counters(self._allocator.refresh(names))

    def totals(self) -> tuple[float, float, float] | None:
        """Steps, samples and tokens reported so far by every process; None before the first step."""
        return self.read()[0]

    def allocator(self) -> dict[str, float] | None:
        """The allocator's counters summed over the workload's processes (`allocator_counters.FIELDS`, the
        out-of-memory sizes of the largest that failed); None where no process reported (not Python, no CUDA yet)."""
        return self.read()[1]

    @staticmethod
    def _totals(views: list[Any]) -> tuple[float, float, float] | None:
        if not views:
            return None
        return sum(v[0] for v in views), sum(v[1] for v in views), sum(v[2] for v in views)

    @staticmethod
    def _counters(views: list[Any]) -> dict[str, float] | None:
        views = [v for v in views if v[7] > 0]  # a process that has read its allocator at least once
        if not views:
            return None
        out = {name: sum(v[i] for v in views) for i, name in enumerate(allocator_counters.FIELDS)
               if name in SUMMED}
        largest = max(views, key=lambda v: v[5])  # the largest allocation that failed, and what was free then
        out["oom_requested_bytes"], out["oom_free_bytes"] = largest[5], largest[6]
        return out
