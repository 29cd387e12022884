"""The CPU of processes named by pid (those holding a GPU context), read as deltas between two calls: their
CPU as % of a core, their busiest thread's, and what they read (rchar), per second."""

from __future__ import annotations

import time
from typing import Optional

import msgspec
import psutil

from gputriage.backends.server_process import process_cpu


class ProcessesCpu(msgspec.Struct, kw_only=True):
    cpu_pct: float  # all the processes' threads, % of one core
    top_thread_pct: float  # the busiest thread of any of them
    read_mb_per_s: Optional[float]  # None when a process's I/O counters cannot be read
    processes: int


class ProcessCpuReader:
    """Call `read(pids)` about once a second; the first call for a pid only sets its baseline."""

    def __init__(self) -> None:
        self._last: dict[int, tuple[float, float, dict[int, float], Optional[int]]] = {}

    def read(self, pids: list[int]) -> Optional[ProcessesCpu]:
        now = time.monotonic()
        cpu = top = 0.0
        reads: Optional[float] = 0.0
        seen = 0
        current: dict[int, tuple[float, float, dict[int, float], Optional[int]]] = {}
        for pid in pids:
            total, threads = process_cpu(pid)
            if total is None:
                continue
            try:
                rchar: Optional[int] = int(psutil.Process(pid).io_counters().read_chars)
            except (psutil.Error, AttributeError, OSError):
                rchar = None
            current[pid] = (now, total, threads, rchar)
            last = self._last.get(pid)
            if last is None or now - last[0] <= 0:
                continue
            span = now - last[0]
            seen += 1
            cpu += 100.0 * (total - last[1]) / span
            top = max([top] + [100.0 * (v - last[2].get(tid, v)) / span for tid, v in threads.items()])
            if reads is not None and rchar is not None and last[3] is not None:
                reads += (rchar - last[3]) / span / 1e6
            else:
                reads = None
        self._last = current
        if not seen:
            return None
        return ProcessesCpu(cpu_pct=round(cpu, 1), top_thread_pct=round(top, 1),
                            read_mb_per_s=round(reads, 2) if reads is not None else None, processes=seen)
