"""A pickle read as plain data only: dicts, lists, tuples, strings, numbers, None — what an allocator snapshot is.

A pickle from someone else can run code: its GLOBAL, STACK_GLOBAL, INST and OBJ opcodes name any importable
callable (`os.system`), which REDUCE, NEWOBJ and BUILD then call. The unpickler here resolves no name at all
(`find_class` refuses, before any import) and follows no persistent id, so no callable can ever reach the stack:
REDUCE and its kind then find only plain values to call and fail. Every refusal is one line; nothing of the file
is imported or called.

The C unpickler trusts the memo indices a pickle gives (a LONG_BINPUT of 2**31 makes it size its memo for 2**32
entries, tens of GB, from a file of a few bytes): `bounded_memory` lowers this process's address-space limit
around the read, so such a file fails with MemoryError (refused) instead of taking the machine's memory."""

from __future__ import annotations

import contextlib
import gc
import gzip
import io
import os
import pickle
from pathlib import Path
from typing import Any, Iterator

from gputriage.model.files import unreadable

try:
    import resource as _resource
except ImportError:  # a platform without address-space limits
    _resource = None  # type: ignore[assignment]

GZIP_MAGIC = b"\x1f\x8b"
GZIP_MAX_RATIO = 64  # a gzip snapshot decompressed to at most this many times its size (and at least 256 MiB)
MEMORY_PER_BYTE = 40  # address space allowed to the read per byte of the file (Python objects of a snapshot: ~15x)
MEMORY_FLOOR = 2 << 30


class SnapshotError(Exception):
    """A file that is not an allocator snapshot gputriage can read: the message is one line, naming the file."""


class RefusedPickle(SnapshotError):
    """A pickle that would construct something other than plain data (or exhaust memory doing so)."""


class _Named(Exception):
    """find_class or persistent_load was asked for something: what it was."""


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise _Named(f"it names {module[:80]}.{name[:80]}")

    def persistent_load(self, pid: Any) -> Any:
        raise _Named("it refers to an object outside the file (a persistent id)")


def loads_plain(data: bytes, what: str = "the file") -> Any:
    """The plain value a pickle holds; RefusedPickle for any that would build or call anything else, SnapshotError
    for bytes that are no pickle."""
    why = "a snapshot is plain data, and this pickle could run code"
    try:
        with no_gc():  # millions of containers: the collector would scan them again and again as they are made
            return _PlainUnpickler(io.BytesIO(data)).load()
    except _Named as exc:
        raise RefusedPickle(f"{what}: refused: {exc}; {why}") from None
    except (TypeError, AttributeError):  # REDUCE, NEWOBJ or BUILD finding a plain value where they need an object
        raise RefusedPickle(f"{what}: refused: it calls or builds an object; {why}") from None
    except (MemoryError, RecursionError):
        raise RefusedPickle(f"{what}: refused: reading it would take more memory than a snapshot of its size") from None
    except Exception as exc:  # UnpicklingError, EOFError, a bad memo index, undecodable text, ...
        raise SnapshotError(f"{what}: not a pickle of a snapshot ({type(exc).__name__}: {str(exc)[:120]})") from None


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """The cyclic garbage collector paused for the block (as it was after): a snapshot's millions of dicts and lists
    hold no cycles, and collecting while they are made or read costs most of the time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def read_bytes(path: str | Path) -> bytes:
    """The file's bytes, gunzipped where it is gzip (within `GZIP_MAX_RATIO` of its size)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise SnapshotError(unreadable(path, exc)) from None
    if not data.startswith(GZIP_MAGIC):
        return data
    limit = max(256 << 20, GZIP_MAX_RATIO * len(data))
    out = io.BytesIO()
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as gz:
            while chunk := gz.read(1 << 20):
                out.write(chunk)
                if out.tell() > limit:
                    raise SnapshotError(f"{path}: refused: it unpacks to more than {limit >> 20} MiB")
    except (OSError, EOFError) as exc:
        raise SnapshotError(f"{path}: not a gzip file that can be read ({exc})") from None
    return out.getvalue()


def _vm_bytes() -> int | None:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


@contextlib.contextmanager
def bounded_memory(file_bytes: int) -> Iterator[None]:
    """This process's address space bounded (RLIMIT_AS) to what it uses now and `MEMORY_PER_BYTE` per byte of the
    file read, for as long as the block runs; nothing where the platform has no such limit. For a command's
    process (`gputriage memory`), not a library call in someone's program: the limit is the process's."""
    resource = _resource
    used = _vm_bytes()
    limits: tuple[int, int] | None = None
    try:
        limits = resource.getrlimit(resource.RLIMIT_AS) if resource is not None else None
    except (OSError, ValueError):
        limits = None
    if resource is None or used is None or limits is None:
        yield
        return
    soft, hard = limits
    bound = used + max(MEMORY_FLOOR, MEMORY_PER_BYTE * file_bytes)
    if hard != resource.RLIM_INFINITY:
        bound = min(bound, hard)
    if soft != resource.RLIM_INFINITY and soft <= bound:
        yield  # already bounded tighter
        return
    try:
        resource.setrlimit(resource.RLIMIT_AS, (bound, hard))
    except (OSError, ValueError):
        yield
        return
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def read_plain(path: str | Path, bounded: bool = False) -> Any:
    """The plain value of a pickle file (gzip or not); `bounded`: within `bounded_memory`."""
    data = read_bytes(path)
    if not bounded:
        return loads_plain(data, str(path))
    with bounded_memory(len(data)):
        return loads_plain(data, str(path))
