"""A process and its descendants, read through psutil: members, CPU seconds, per-thread CPU, RSS
and I/O counters (storage bytes, and every byte its reads returned, page cache included).
Processes that vanish or deny access are skipped, never raised."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable


@dataclass(frozen=True)
class ProcessDetail:
    threads_cpu_s: dict[int, float]  # thread id → user + system seconds
    cpu_s: float  # the process's user + system seconds, its ended threads included
    rss_bytes: int
    read_bytes: int  # from storage
    write_bytes: int
    read_chars: int  # returned by read() and friends: files (page cache included), pipes, sockets
    io_readable: bool = True  # False where the I/O counters are denied (another user's process): 0 above
    name: str = ""  # its name (/proc/PID/comm): a DataLoader's worker names itself pt_data_worker


@dataclass(frozen=True)
class ProcessRates:
    """What a set of processes did between two readings, per second."""

    processes: int  # read at both ends
    cpu_pct: float  # all their threads, % of one core
    top_thread_pct: float  # the busiest thread of any of them
    main_thread_pct: float  # the busiest of their main threads (thread id = process id)
    read_bytes_per_s: float  # from storage
    write_bytes_per_s: float
    rchar_bytes_per_s: float
    io_complete: bool  # every process's I/O counters were read


def rates(prev: dict[int, ProcessDetail], seen: dict[int, ProcessDetail], dt_s: float) -> ProcessRates:
    """The processes read in both `prev` and `seen`, `dt_s` apart (a process that ended or started in between
    is left out)."""
    both = [(prev[pid], d) for pid, d in seen.items() if pid in prev]
    top = main = 0.0
    for pid, b in seen.items():
        a = prev.get(pid)
        if a is None:
            continue
        for tid, secs in b.threads_cpu_s.items():
            before = a.threads_cpu_s.get(tid)
            if before is not None:
                pct = (secs - before) / dt_s * 100
                top = max(top, pct)
                if tid == pid:
                    main = max(main, pct)

    def per_s(field: str) -> float:
        return sum(max(0.0, getattr(b, field) - getattr(a, field)) for a, b in both) / dt_s

    return ProcessRates(
        processes=len(both),
        cpu_pct=100 * per_s("cpu_s"),
        top_thread_pct=top,
        main_thread_pct=main,
        read_bytes_per_s=per_s("read_bytes"),
        write_bytes_per_s=per_s("write_bytes"),
        rchar_bytes_per_s=per_s("read_chars"),
        io_complete=all(a.io_readable and b.io_readable for a, b in both),
    )


def read_details(processes: Iterable[Any]) -> dict[int, ProcessDetail]:
    """Each psutil process's detail; those that vanish or deny access are skipped."""
    import psutil

    out = {}
    for p in processes:
        try:
            with p.oneshot():
                threads = {th.id: th.user_time + th.system_time for th in p.threads()}
                t = p.cpu_times()
                name = p.name()  # read with the times (/proc/PID/stat), once per read: a worker renames itself
                rss = p.memory_info().rss
                try:
                    io = p.io_counters()
                    rd, wr, rc, ok = io.read_bytes, io.write_bytes, getattr(io, "read_chars", 0), True
                except (psutil.AccessDenied, AttributeError):
                    rd = wr = rc = 0
                    ok = False
        except psutil.Error:
            continue
        out[p.pid] = ProcessDetail(threads, t.user + t.system, rss, rd, wr, rc, ok, name)
    return out


def details_of(pids: Iterable[int]) -> dict[int, ProcessDetail]:
    """The detail of processes named by pid (those holding a GPU context, say)."""
    import psutil

    processes: list[Any] = []
    for pid in pids:
        try:
            processes.append(psutil.Process(pid))
        except psutil.Error:
            continue
    return read_details(processes)


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
        return read_details(self._members)
