"""Read what a workload reports from inside: the step counters of `gputriage.step()`
(`gputriage.inworkload.progress`), the CUDA caching allocator's counters (`gputriage.inworkload.allocator_counters`)
and where its threads spend their time (`gputriage.inworkload.stack_sampler`), per-process files in the folder `run`
gave it, each summed over the processes. Files are mapped once (the stack reports, JSON, are read again when they
change) and re-listed each read (a new rank, a forked worker); a process that ended leaves its counts, which
stay counted."""

from __future__ import annotations

import json
import mmap
import os
import time
from pathlib import Path
from typing import Any, Mapping

from gputriage.inworkload import allocator_counters, progress, stack_sampler
from gputriage.inworkload.stack_categories import BUSY, CATEGORIES, HOST_COMPUTE, INPUT_WAIT, LOADER
from gputriage.model.sample import StackCounts, StackLine
from gputriage.sampling.oom_marks import OomMarks

SUMMED = ("retries", "cuda_mallocs", "cuda_frees", "ooms", "reserved_bytes", "allocated_bytes")  # over processes
# a sample carries the top lines at most every max(1 s, 5% of the time read so far), at least every 10 s: enough
# for a steady state's lines, a few kB a second in the store at first, less later
LINES_EVERY_S, LINES_EVERY_SHARE, LINES_EVERY_MAX_S = 1.0, 0.05, 10.0
LINES_KEPT = 50  # lines a sample carries


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
                        self.views[n] = memoryview(mmap.mmap(fh.fileno(), self.nbytes, access=mmap.ACCESS_READ)).cast(
                            "d"
                        )
                except (OSError, ValueError):
                    continue
        return list(self.views.values())


class _Reports:
    """The stack sampler's reports (`stacks.PID.json`), read again when they change."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.seen: dict[str, tuple[int, dict[str, Any]]] = {}

    def refresh(self, names: list[str]) -> list[dict[str, Any]]:
        for n in names:
            if not n.startswith(stack_sampler.PREFIX) or not n.endswith(".json"):
                continue
            path = os.path.join(self.folder, n)
            try:
                changed = os.stat(path).st_mtime_ns
                if n in self.seen and self.seen[n][0] == changed:
                    continue
                with open(path) as fh:
                    data = json.load(fh)
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and isinstance(data.get("main"), dict):
                self.seen[n] = (changed, data)
        return [d for _, d in self.seen.values()]


def merged_stacks(reports: list[dict[str, Any]], lines: bool) -> StackCounts | None:
    """The stack reports of the processes that launch the workload's work, summed: those that initialized CUDA, or
    (none did: a CPU workload) those `multiprocessing` did not start (spawned workers are helpers), or all. The top
    lines only if `lines`."""
    chosen = (
        [r for r in reports if r.get("cuda")]
        or [r for r in reports if r.get("rank") and not r.get("child")]  # a job's ranks, not its launcher
        or [r for r in reports if not r.get("child")]
        or reports
    )
    if not chosen:
        return None
    main: dict[str, float] = {}
    every: dict[str, float] = {}
    for r in chosen:
        for c in CATEGORIES:
            main[c] = main.get(c, 0.0) + float(r["main"].get(c, 0.0))
            every[c] = every.get(c, 0.0) + float((r.get("all") or {}).get(c, 0.0))
        main[LOADER] = main.get(LOADER, 0.0) + float(r.get("main_loader", 0.0))
    cpus = [r.get("main_cpu_s") for r in chosen]
    out = StackCounts(
        ticks=sum(float(r.get("ticks", 0.0)) for r in chosen),
        main=main,
        all=every,
        main_cpu_s=sum(float(c) for c in cpus if c is not None) if None not in cpus else None,
        wall_s=sum(float(r.get("wall_s", 0.0)) for r in chosen),
    )
    if lines:
        rows: dict[tuple[str, int, str, str], list[float]] = {}
        owned: dict[str, bool] = {}  # by file, where the sampler said (an older one did not)
        for r in chosen:
            for row in r.get("lines") or []:
                try:
                    key = (str(row[0]), int(row[1]), str(row[2]), str(row[3]))
                    counts = rows.setdefault(key, [0.0, 0.0])
                    counts[0] += float(row[4])
                    counts[1] += float(row[5])
                    if len(row) > 6:
                        owned[key[0]] = bool(row[6])
                except (IndexError, TypeError, ValueError):
                    continue
        top = sorted(rows.items(), key=lambda kv: -kv[1][1])[:LINES_KEPT]
        out.lines = [StackLine(*key, main=v[0], all=v[1], own=owned.get(key[0])) for key, v in top]
        out.libraries = _imported(chosen)
    return out


def _imported(reports: list[dict[str, Any]]) -> dict[str, str]:
    """The GPU libraries and frameworks the processes imported (a newer sampler's report says; an older one's not)."""
    out: dict[str, str] = {}
    for r in reports:
        got = r.get("libraries")
        if isinstance(got, dict):
            out.update({str(k): str(v) for k, v in got.items()})
    return out


def main_shares(main: Mapping[str, float], ticks: float, cpu_s: float | None, wall_s: float | None) -> dict[str, float]:
    """The main thread's share of the time in each category (and "loader", its input waits on a DataLoader) from its
    samples over a span, with its CPU time over the span where known: a sample needs the interpreter lock, which a
    thread running Python gives up when it blocks, so the samples find it waiting more often than it does. Its input
    waits are capped at its share off the CPU; what they lose goes to the other categories seen, in proportion
    (to host_compute where none was seen)."""
    if ticks <= 0:
        return {}
    counts = {c: max(0.0, float(main.get(c, 0.0))) for c in CATEGORIES}
    total = sum(counts.values())
    if total <= 0:
        return {}
    shares = {c: v / total for c, v in counts.items()}
    loader = min(counts[INPUT_WAIT], max(0.0, float(main.get(LOADER, 0.0)))) / total
    if cpu_s is not None and wall_s:
        off = min(1.0, max(0.0, 1.0 - cpu_s / wall_s))
        excess = shares[INPUT_WAIT] - off
        if excess > 0:
            loader *= off / shares[INPUT_WAIT]
            shares[INPUT_WAIT] = off
            rest = 1.0 - off - excess
            if rest > 0:
                for c in shares:
                    if c != INPUT_WAIT:
                        shares[c] *= (rest + excess) / rest
            else:
                shares[HOST_COMPUTE] += excess
    shares[LOADER] = loader
    return shares


def others_busy(main: Mapping[str, float], every: Mapping[str, float], ticks: float) -> float | None:
    """The Python threads beside the main one at work (not waiting), on average over a span's samples."""
    if ticks <= 0:
        return None
    return max(0.0, sum(float(every.get(c, 0.0)) - float(main.get(c, 0.0)) for c in BUSY) / ticks)


class ProgressReader:
    def __init__(self, folder: str | Path, clock: Any = time.monotonic) -> None:
        self.folder = str(folder)
        self._steps = _Mapped(self.folder, progress.PREFIX, progress.FILE_BYTES)
        self._allocator = _Mapped(self.folder, allocator_counters.PREFIX, allocator_counters.FILE_BYTES)
        self._stacks = _Reports(self.folder)
        self.ooms = OomMarks(self.folder)  # the out-of-memory markers the workload writes (`inworkload.memory_history`)
        self._names: list[str] = []  # the folder's last listing
        self._clock = clock
        self._first_s: float | None = None
        self._lines_s: float | None = None  # when a sample last carried the top lines

    def read(self) -> tuple[tuple[float, float, float] | None, dict[str, float] | None]:
        """`totals()` and `allocator()` from one listing of the folder."""
        return self.read_all()[:2]

    def read_all(self) -> tuple[tuple[float, float, float] | None, dict[str, float] | None, StackCounts | None]:
        """`totals()`, `allocator()` and `stacks()` from one listing of the folder (what the sampler reads each
        sample)."""
        try:
            names = os.listdir(self.folder)
        except OSError:
            names = []
        self._names = names
        return (
            self._totals(self._steps.refresh(names)),
            self._counters(self._allocator.refresh(names)),
            self._read_stacks(names),
        )

    def fresh_ooms(self) -> list[str]:
        """Out-of-memory markers written since the last call, from the last listing (`read_all`)."""
        return self.ooms.fresh(self._names)

    def stacks(self) -> StackCounts | None:
        """The stack sampler's counts summed over the workload's launching processes (the top lines now and then);
        None where no process reported (not Python, not under `run`)."""
        return self.read_all()[2]

    def _read_stacks(self, names: list[str]) -> StackCounts | None:
        reports = self._stacks.refresh(names)
        if not reports:
            return None
        now = self._clock()
        if self._first_s is None:
            self._first_s = now
        every = min(LINES_EVERY_MAX_S, max(LINES_EVERY_S, LINES_EVERY_SHARE * (now - self._first_s)))
        lines = self._lines_s is None or now - self._lines_s >= every
        if lines:
            self._lines_s = now
        return merged_stacks(reports, lines)

    def rank_reports(self) -> list[dict[str, Any]]:
        """The stack reports of the processes that are ranks of a distributed job (as last read by `read_all`)."""
        return [d for _, d in self._stacks.seen.values() if d.get("rank")]

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
        out = {name: sum(v[i] for v in views) for i, name in enumerate(allocator_counters.FIELDS) if name in SUMMED}
        largest = max(views, key=lambda v: v[5])  # the largest allocation that failed, and what was free then
        out["oom_requested_bytes"], out["oom_free_bytes"] = largest[5], largest[6]
        return out
