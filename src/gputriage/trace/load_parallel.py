"""Read a large uncompressed Kineto trace on several cores: the same columns as `load`, sooner.

The event array is cut at event boundaries (Kineto writes one event per `\\n  {`) into one range
per worker; each forked worker reads its own range from the file and decodes it as `load` does, and
the parent appends the workers' columns in file order, re-interning their names. Nothing of the file
is held in the parent. Used for files of PARALLEL_MIN_BYTES or more, on Linux with several cores,
when the process runs no other thread (forking beside threads is unsafe), by at most
`GPUTRIAGE_TRACE_READERS` processes (8 by default); a compressed, truncated or unusually laid out
file, or a worker that fails to start, is read by `load`'s single stream.
"""

from __future__ import annotations

import os
import resource
import signal
import sys
from array import array
from typing import Any

import msgspec

from gputriage.model.files import FileName
from gputriage.trace import load as L

PARALLEL_MIN_BYTES = 32 * 2**20
RANGE_MIN_BYTES = 8 * 2**20  # less per worker costs more in starting it than it saves
MAX_WORKERS = 8
PROBE_BYTES = 2**20
NAME_COLUMNS = ("g_name", "r_name", "o_name")


def workers_for(size: int) -> int:
    """How many workers a file of `size` bytes is worth here (1: read it in one stream)."""
    if size < PARALLEL_MIN_BYTES or sys.platform != "linux":
        return 1
    cores = len(os.sched_getaffinity(0))
    cap = os.environ.get("GPUTRIAGE_TRACE_READERS", "")
    most = int(cap) if cap.isdigit() and int(cap) > 0 else MAX_WORKERS
    workers = max(1, min(cores, most, size // RANGE_MIN_BYTES))
    if workers > 1:
        import threading  # only where there is a fork to decide: one reader does without the module

        if threading.active_count() > 1:
            return 1
    return workers


def plan(path: str, size: int, workers: int) -> tuple[bytes, list[tuple[int, int]]] | None:
    """The header's bytes and the byte ranges of the event array, one per worker; None when the file is
    not in Kineto's own layout (or is compressed, or cut): the single stream reads it."""
    with open(path, "rb") as fh:
        head = fh.read(PROBE_BYTES)
        if head[:2] == b"\x1f\x8b" or head.lstrip()[:1] != b"{":
            return None
        key = head.find(L.ARRAY_KEY)
        bracket = head.find(b"[", key) if key >= 0 else -1
        first = head.find(L.EVENT_START, bracket) if bracket >= 0 else -1
        if first < 0 or head[bracket + 1 : first].strip():
            return None
        fh.seek(max(0, size - PROBE_BYTES))
        tail = fh.read()
        close = tail.rfind(b"\n  ]")
        if close < 0:
            return None  # truncated: the stream salvages what it can
        end = max(0, size - PROBE_BYTES) + close
        cuts = [first]
        for k in range(1, workers):
            fh.seek(first + (end - first) * k // workers)
            probe = fh.read(PROBE_BYTES)
            at = probe.find(L.EVENT_START)
            if at < 0:
                return None
            cut = fh.tell() - len(probe) + at
            if cuts[-1] < cut < end:
                cuts.append(cut)
    return head[:key], list(zip(cuts, cuts[1:] + [end]))


def _read_range(path: str, start: int, end: int) -> dict[str, Any]:
    """In a worker: decode the events in [start, end) into columns, as `load` does."""
    cols = L.Columns(path=path)
    with open(path, "rb") as fh:
        fh.seek(start)
        rest, offset = L.pump(fh, cols, path, b"", start, left=end - start)
        if rest.strip():
            L._decode_events(rest, cols, path, offset)
    out: dict[str, Any] = {k: v for k, v in vars(cols).items() if isinstance(v, array)}
    out.update(
        names=cols.names,
        shapes=cols.shapes,
        steps=cols.steps,
        optimizer_steps=cols.optimizer_steps,
        overheads=cols.overheads,
        compiled=cols.compiled,
        loading=cols.loading,
        activities_whole=cols.activities_whole,
        skipped=cols.skipped_kinds,
        events=cols.events,
        memory_bytes=_own_memory_bytes(),
    )
    return out


def _default_signals() -> None:
    """A worker ends on the signals that end a process, whatever its parent set: a handler inherited through the
    fork (a command's own for SIGTERM) would let a worker live through `Pool.terminate` and its parent wait on it
    forever."""
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)


def _own_memory_bytes() -> int:
    """This worker's memory at its end (its peak: the columns are whole), not counting what it shares with
    the parent it was forked from: its proportional set size (PSS), else its peak RSS."""
    try:
        with open("/proc/self/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def load(path: str, size: int, workers: int) -> L.Columns | None:
    """The trace's columns read by `workers` processes; None when this file is for the single stream."""
    planned = plan(path, size, workers)
    if planned is None or len(planned[1]) < 2:
        return None
    header, ranges = planned
    import multiprocessing

    try:
        pool = multiprocessing.get_context("fork").Pool(len(ranges), initializer=_default_signals)
    except OSError:
        return None
    try:
        parts = pool.starmap(_read_range, [(str(path), a, b) for a, b in ranges])
        pool.close()  # each worker ends at the end of its queue: no signal needed
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()
    cols = L.Columns(path=str(path), file_bytes=size)
    try:
        cols.header = L._header.decode(header + b'"traceEvents": []}')
    except msgspec.DecodeError:
        cols.problems.append("the trace header is not valid JSON; device properties are unknown")
    cols.workers, cols.workers_memory_bytes = len(parts), sum(p["memory_bytes"] for p in parts)
    for part in parts:
        remap = [cols.intern(n) for n in part["names"]]
        shapes = [cols.intern_shape(s) for s in part["shapes"]]
        for name, column in vars(cols).items():
            if isinstance(column, array):
                values = part[name]
                to = remap if name in NAME_COLUMNS else shapes if name == "o_shape" else None
                column.extend(array(values.typecode, [to[i] for i in values]) if to else values)
        cols.steps += part["steps"]
        cols.optimizer_steps += part["optimizer_steps"]
        cols.overheads += part["overheads"]
        cols.compiled += part["compiled"]
        cols.loading += part["loading"]
        cols.activities_whole = part["activities_whole"]  # the last part's (a file read in parts is never cut)
        for k, n in part["skipped"].items():
            cols.skipped_kinds[k] = cols.skipped_kinds.get(k, 0) + n
        cols.events += part["events"]
    return cols


def read(path: FileName) -> L.Columns:
    """The trace's columns: on several cores where the file is worth it (`workers_for`), else — or when
    its layout is not for it — in `load`'s one stream."""
    path = os.fspath(path)
    try:
        size = os.path.getsize(path)
    except OSError:
        return L.load(path)  # which says why the file cannot be read
    workers = workers_for(size)
    if workers > 1:
        cols = load(path, size, workers)
        if cols is not None and cols.events:
            return cols
    return L.load(path)
