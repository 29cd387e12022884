"""Read a Kineto chrome trace (.json or .json.gz) into typed columns, streaming.

The file is read in blocks; each block's events are cut at event boundaries and decoded with
msgspec into small typed records holding only the fields the analyses use, which are then
appended to compact columns (arrays, interned names). Memory is bounded by the columns, not by
the file: the event list never exists as Python dicts.

Kineto writes one event per `\\n  {` at indentation two; a file laid out otherwise is decoded
whole (still typed).
"""

from __future__ import annotations

import os
from typing import Any, BinaryIO, Optional

import msgspec

from gputriage.model.files import FileName, unreadable
from gputriage.trace.columns import Columns, append
from gputriage.trace.events import (
    COMPILED_ANNOTATIONS,
    GPU_CATS,
    KERNEL,
    MEMCPY,
    MEMSET,
    RUNTIME_CATS,
    Args,
    Event,
    Header,
    _header,
    _kineto_list,
    generic_events,
    kineto_other,
    whole_trace,
)
from gputriage.trace.files import Salvaging, open_trace
from gputriage.trace.op_cost import NEVER_LAUNCH

BLOCK_BYTES = 256 * 1024  # small blocks: less memory, and faster (a block's decoded events stay in the CPU's L2 cache)
HEAD_BYTES = 2 * 2**20  # the first read, which must hold the header (the device properties) and "traceEvents"
EVENT_START = b"\n  {"
ARRAY_KEY = b'"traceEvents"'

# re-exported: the analyses and tests read these from here
__all__ = [
    "ARRAY_KEY",
    "BLOCK_BYTES",
    "COMPILED_ANNOTATIONS",
    "EVENT_START",
    "GPU_CATS",
    "KERNEL",
    "MEMCPY",
    "MEMSET",
    "NEVER_LAUNCH",
    "RUNTIME_CATS",
    "Args",
    "Columns",
    "Event",
    "TraceError",
    "load",
    "pump",
]


class TraceError(Exception):
    """A file that is not a usable trace: missing, not JSON, not a Kineto trace, no events."""


def load(path: FileName) -> Columns:
    """The trace's columns, read in one stream (`load_parallel.read` reads a large file on several cores)."""
    path = os.fspath(path)
    try:
        size = os.path.getsize(path)
        fh = open_trace(path)
    except OSError as exc:
        raise TraceError(unreadable(path, exc)) from None
    cols = Columns(path=str(path), file_bytes=size)
    try:
        with fh:
            try:
                _stream(fh, cols, path)  # type: ignore[arg-type]
            except TraceError:
                if isinstance(fh, Salvaging) and fh.problem and fh.read_bytes == 0:
                    raise TraceError(f"{path}: not a readable gzip file ({fh.problem})") from None
                raise
            if isinstance(fh, Salvaging) and fh.problem:
                cols.problems.append(
                    f"the compressed file is cut or corrupt after {fh.read_bytes / 1e6:.1f} MB of "
                    f"JSON ({fh.problem}): the analysis covers what came before"
                )
    except (OSError, EOFError) as exc:
        if cols.events == 0:
            raise TraceError(f"{path}: cannot read: {exc}") from None
        cols.truncated = True
        cols.problems.append(f"the file ends early ({exc}); {cols.events} events were read")
    except RecursionError:
        raise TraceError(f"{path}: not a Kineto trace (JSON nested too deep)") from None
    if cols.events == 0:
        raise TraceError(f"{path}: the trace holds no events" + (f" ({cols.problems[0]})" if cols.problems else ""))
    return cols


def _stream(fh: BinaryIO, cols: Columns, path: str) -> None:
    head = fh.read(HEAD_BYTES)
    if not head.lstrip()[:1] == b"{":
        raise TraceError(f"{path}: not a JSON object (a Kineto trace starts with '{{')")
    key = head.find(ARRAY_KEY)
    if key < 0:
        rest = head + fh.read()
        if ARRAY_KEY not in rest:
            raise TraceError(f"{path}: no 'traceEvents': not a PyTorch profiler (Kineto) trace")
        head, key = rest, rest.find(ARRAY_KEY)
    bracket = head.find(b"[", key)
    first = head.find(EVENT_START, bracket)
    between = head[bracket + 1 : first] if first >= 0 else b""
    if first < 0 or between.strip():
        _whole_file(head + fh.read(), cols, path)
        return
    try:
        cols.header = _header.decode(head[:key] + b'"traceEvents": []}')
    except msgspec.DecodeError:
        cols.problems.append("the trace header is not valid JSON; device properties are unknown")
    buf, offset = pump(fh, cols, path, head[first:], first)
    end = buf.rfind(b"\n  ]")
    if end < 0:
        end = buf.rfind(b"]")  # not Kineto's own layout at the very end: try the last bracket
        if end > 0:
            try:
                _decode_events(bytes(buf[:end]), cols, path, offset)
                return
            except TraceError as exc:
                bracket_error = exc
        else:
            bracket_error = None
        # truncated: decode every complete event we have
        cut = buf.rfind(EVENT_START)
        if cut > 0:
            _decode_events(bytes(buf[:cut]), cols, path, offset)
        if cols.events == 0 and bracket_error is not None:
            raise bracket_error
        cols.truncated = True
        cols.problems.append(
            f"the trace is truncated inside traceEvents; the analysis covers the {cols.events} events before the cut"
        )
        return
    _decode_events(bytes(buf[:end]), cols, path, offset)


def pump(
    fh: Any, cols: Columns, path: str, pending: bytes, offset: int, left: Optional[int] = None
) -> tuple[bytes, int]:
    """Decode the events of a stream into the columns: `pending` (which starts at an event's `\\n  {`, `offset`
    bytes into the file), then what `fh` holds (at most `left` bytes), a block at a time through one buffer read
    into and reused (a new buffer per block costs its pages' first touch, a tenth of the read). What follows the
    last event start (the array's end, or an event the file cuts) is returned, with its offset."""
    buf = bytearray(max(2 * BLOCK_BYTES, 2 * len(pending)))
    filled = len(pending)
    buf[:filled] = pending
    readinto = getattr(fh, "readinto", None)
    while left is None or left > 0:
        want = BLOCK_BYTES if left is None else min(BLOCK_BYTES, left)
        if filled + want > len(buf):  # an event longer than the buffer's free part: grow it (nothing exported now)
            buf.extend(bytes(filled + want - len(buf)))
        if readinto is not None:
            with memoryview(buf) as view, view[filled : filled + want] as free:
                n = readinto(free)
        else:
            block = fh.read(want)
            n = len(block)
            buf[filled : filled + n] = block
        if not n:
            break
        filled += n
        if left is not None:
            left -= n
        cut = buf.rfind(EVENT_START, 0, filled)
        if cut <= 0:
            continue
        _decode_in_place(buf, cut, cols, path, offset)
        offset += cut
        buf[: filled - cut] = buf[cut:filled]  # the unfinished event to the front (same size: no resize)
        filled -= cut
    return bytes(buf[:filled]), offset


def _decode_in_place(buf: bytearray, cut: int, cols: Columns, path: str, offset: int) -> None:
    """Decode the events in buf[:cut] without copying: buf[0] is the newline before the first event
    and, in Kineto's layout, the last non-blank byte before `cut` is the comma after an event; they
    become the array's brackets."""
    last = cut - 1
    while last > 0 and buf[last] in b" \n\r\t":
        last -= 1
    if buf[last] != ord(","):
        _decode_events(bytes(buf[:cut]), cols, path, offset)
        return
    buf[0] = ord("[")
    buf[last] = ord("]")
    view = memoryview(buf)
    try:
        events, kineto = _decode(view[: last + 1], path, offset)
    finally:
        view.release()
    append(cols, events, kineto)


def _decode_events(chunk: bytes, cols: Columns, path: str, offset: int) -> None:
    body = chunk.rstrip()
    if body.endswith(b","):
        body = body[:-1]
    append(cols, *_decode(b"[" + body + b"]", path, offset))


def _decode(chunk: Any, path: str, offset: int) -> tuple[list[Any], bool]:
    """A chunk's events, and whether as Kineto's phases (`events` module doc) rather than generic events."""
    try:
        return _kineto_list.decode(chunk), True
    except msgspec.DecodeError:
        pass
    try:  # a category Kineto did not write when this was
        return kineto_other().decode(chunk), True
    except msgspec.DecodeError:
        pass
    try:
        return generic_events().decode(chunk), False
    except msgspec.ValidationError as exc:
        raise TraceError(f"{path}: an event near byte {offset} is not a Kineto event: {exc}") from None
    except msgspec.DecodeError as exc:
        raise TraceError(f"{path}: corrupt JSON near byte {offset}: {exc}") from None


def _whole_file(data: bytes, cols: Columns, path: str) -> None:
    try:
        whole = whole_trace().decode(data)
    except msgspec.ValidationError as exc:
        raise TraceError(f"{path}: not a Kineto trace: {exc}") from None
    except msgspec.DecodeError as exc:
        raise TraceError(f"{path}: corrupt or truncated JSON: {exc}") from None
    cols.header = Header(
        whole.schemaVersion,
        whole.deviceProperties,
        whole.distributedInfo,
        whole.baseTimeNanoseconds,
        whole.cuda_runtime_version,
    )
    append(cols, whole.traceEvents, kineto=False)
