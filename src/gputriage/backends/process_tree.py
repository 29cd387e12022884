"""A process and its descendants, read through psutil: members, CPU seconds, per-thread CPU, RSS
and I/O counters (storage bytes, and every byte its reads returned, page cache included).
Processes that vanish or deny access are skipped, never raised."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ProcessDetail:
    threads_cpu_s: dict[int, float]  # thread id → user + system seconds
    cpu_s: float  # the process's user + system seconds, its ended threads included
    rss_bytes: int
    read_bytes: int  # from storage
    write_bytes: int
    read_chars: int  # returned by read() and friends: files (page cache included), pipes, sockets


class ProcessTree:
    """`exclude`: processes of the tree that are not the workload (gputriage's own sampler, when it is a
    child of the process it samples), with their descendants."""

    def __init__(self, pid: int, exclude: frozenset[int] = frozenset()) -> None:
        import psutil

        self._ps = psutil
        self.exclude = exclude
        self.root = psutil.Process(pid)  # raises psutil.NoSuchProcess when it is already gone
        self._members: list[Any] = [self.root]

    def refresh(self) -> bool:
        """Re-scan the descendants (a walk over /proc: not for every sample). False when the root is gone."""
        try:
            children = self.root.children(recursive=True)
        except self._ps.Error:
            return False
        if self.exclude:
            skip = set(self.exclude)
            for p in children:
                try:
                    if p.ppid() in skip:
                        skip.add(p.pid)
                except self._ps.Error:
                    continue
            children = [p for p in children if p.pid not in skip]
        self._members = [self.root] + children
        return True

    @property
    def pids(self) -> set[int]:
        return {p.pid for p in self._members}

    def cpu_seconds(self) -> dict[int, float]:
        out = {}
        for p in self._members:
            try:
                t = p.cpu_times()
            except self._ps.Error:
                continue
            out[p.pid] = t.user + t.system
        return out

    def details(self) -> dict[int, ProcessDetail]:
        out = {}
        for p in self._members:
            try:
                with p.oneshot():
                    threads = {th.id: th.user_time + th.system_time for th in p.threads()}
                    t = p.cpu_times()
                    rss = p.memory_info().rss
                    try:
                        io = p.io_counters()
                        rd, wr = io.read_bytes, io.write_bytes
                        rc = getattr(io, "read_chars", 0)
                    except (self._ps.AccessDenied, AttributeError):
                        rd = wr = rc = 0
            except self._ps.Error:
                continue
            out[p.pid] = ProcessDetail(threads, t.user + t.system, rss, rd, wr, rc)
        return out
