"""Read the progress a workload reports through `gputriage.step()`: the per-process counter files
in the folder `run` gave it (`gputriage.progress`), summed. Files are mapped once and re-listed each
read (a new rank, a forked worker); a process that ended leaves its counts, which stay counted."""

from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import Any

from gputriage.progress import FILE_BYTES, PREFIX


class ProgressReader:
    def __init__(self, folder: str | Path) -> None:
        self.folder = str(folder)
        self._views: dict[str, Any] = {}  # float64 views of each process's mapped file

    def totals(self) -> tuple[float, float, float] | None:
        """Steps, samples and tokens reported so far by every process; None before the first step."""
        try:
            names = [n for n in os.listdir(self.folder) if n.startswith(PREFIX)]
        except OSError:
            return None
        for n in names:
            if n not in self._views:
                try:
                    with open(os.path.join(self.folder, n), "rb") as fh:
                        if os.fstat(fh.fileno()).st_size < FILE_BYTES:
                            continue  # still being created
                        self._views[n] = memoryview(mmap.mmap(fh.fileno(), FILE_BYTES,
                                                              access=mmap.ACCESS_READ)).cast("d")
                except (OSError, ValueError):
                    continue
        if not self._views:
            return None
        views = list(self._views.values())
        return sum(v[0] for v in views), sum(v[1] for v in views), sum(v[2] for v in views)
