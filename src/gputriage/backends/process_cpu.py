"""The CPU of processes named by pid (those holding a GPU context), read as deltas between two calls: their
CPU as % of a core, their busiest thread's, and what they read (rchar), per second."""

from __future__ import annotations

import time
from typing import Optional

import msgspec

from gputriage.backends.process_tree import ProcessDetail, details_of, rates


class ProcessesCpu(msgspec.Struct, kw_only=True):
    cpu_pct: float  # all the processes' threads, % of one core
    top_thread_pct: float  # the busiest thread of any of them
    read_mb_per_s: Optional[float]  # None when a process's I/O counters cannot be read
    processes: int


class ProcessCpuReader:
    """Call `read(pids)` about once a second; the first call for a pid only sets its baseline."""

    def __init__(self) -> None:
        self._last: dict[int, ProcessDetail] = {}
        self._last_t = time.monotonic()

    def read(self, pids: list[int]) -> Optional[ProcessesCpu]:
        now = time.monotonic()
        seen = details_of(pids)
        r = rates(self._last, seen, max(now - self._last_t, 1e-6))
        self._last, self._last_t = seen, now
        if not r.processes:
            return None
        return ProcessesCpu(
            cpu_pct=round(r.cpu_pct, 1),
            top_thread_pct=round(r.top_thread_pct, 1),
            read_mb_per_s=round(r.rchar_bytes_per_s / 1e6, 2) if r.io_complete else None,
            processes=r.processes,
        )
