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
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Optional, Union

import msgspec

from gputriage.model.files import unreadable
from gputriage.trace.files import Salvaging, open_trace
from gputriage.trace.op_cost import op_cost

BLOCK_BYTES = 2 * 2**20  # small blocks: less memory, and faster (the decoded events stay in the CPU caches)
EVENT_START = b"\n  {"
ARRAY_KEY = b'"traceEvents"'

# gpu event kinds
KERNEL, MEMCPY, MEMSET = 0, 1, 2
GPU_CATS = {"kernel": KERNEL, "gpu_memcpy": MEMCPY, "gpu_memset": MEMSET}
RUNTIME_CATS = {"cuda_runtime", "cuda_driver", "runtime", "driver"}
# how Kineto marks torch.compile'd code on the host: the region dynamo entered (a cpu_op in recent versions), the
# autograd function around the compiled graph, the call into the compiled graph itself
COMPILED_ANNOTATIONS = ("Torch-Compiled Region", "CompiledFunction", "## Call CompiledFxGraph", "torch_compile")


class TraceError(Exception):
    """A file that is not a usable trace: missing, not JSON, not a Kineto trace, no events."""


class Args(msgspec.Struct):
    external_id: Optional[int] = msgspec.field(default=None, name="External id")
    correlation: Optional[int] = None
    device: Optional[int] = None
    stream: Optional[int] = None
    nbytes: Optional[int] = msgspec.field(default=None, name="bytes")
    flops: Optional[float] = None
    blocks_per_sm: Optional[float] = msgspec.field(default=None, name="blocks per SM")
    dims: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name="Input Dims")
    types: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name="Input type")


class Event(msgspec.Struct):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: Union[int, str] = 0
    tid: Union[int, str] = 0
    ts: float = 0.0
    dur: float = 0.0
    args: Optional[Args] = None


class Header(msgspec.Struct):
    schemaVersion: Optional[int] = None
    deviceProperties: list[dict[str, Any]] = []
    distributedInfo: Optional[dict[str, Any]] = None
    baseTimeNanoseconds: Optional[int] = None
    cuda_runtime_version: Optional[int] = None


class WholeTrace(Header):
    traceEvents: list[Event] = []


_event_list = msgspec.json.Decoder(list[Event])
_header = msgspec.json.Decoder(Header)
_whole = msgspec.json.Decoder(WholeTrace)
_raw_list = msgspec.json.Decoder(list[Any])


@dataclass
class Columns:
    """The trace as columns. Times in microseconds (the trace's own unit)."""

    names: list[str] = field(default_factory=list)
    _name_ids: dict[str, int] = field(default_factory=dict)
    # GPU activities
    g_ts: array = field(default_factory=lambda: array("d"))
    g_dur: array = field(default_factory=lambda: array("d"))
    g_name: array = field(default_factory=lambda: array("i"))
    g_kind: array = field(default_factory=lambda: array("b"))
    g_dev: array = field(default_factory=lambda: array("i"))
    g_stream: array = field(default_factory=lambda: array("q"))
    g_corr: array = field(default_factory=lambda: array("q"))
    g_ext: array = field(default_factory=lambda: array("q"))
    g_bytes: array = field(default_factory=lambda: array("q"))
    g_bpsm: array = field(default_factory=lambda: array("f"))  # blocks per SM (-1 unknown): < 1 leaves SMs idle
    # CUDA runtime/driver calls
    r_ts: array = field(default_factory=lambda: array("d"))
    r_dur: array = field(default_factory=lambda: array("d"))
    r_name: array = field(default_factory=lambda: array("i"))
    r_tid: array = field(default_factory=lambda: array("q"))
    r_corr: array = field(default_factory=lambda: array("q"))
    # framework ops
    o_ts: array = field(default_factory=lambda: array("d"))
    o_dur: array = field(default_factory=lambda: array("d"))
    o_name: array = field(default_factory=lambda: array("i"))
    o_tid: array = field(default_factory=lambda: array("q"))
    o_ext: array = field(default_factory=lambda: array("q"))
    o_flops: array = field(default_factory=lambda: array("d"))
    o_bytes: array = field(default_factory=lambda: array("d"))
    o_dtype: array = field(default_factory=lambda: array("i"))
    # ProfilerStep#N spans on the host
    steps: list[tuple[str, float, float]] = field(default_factory=list)
    # Optimizer.step#... spans on the host (step boundaries when there are no ProfilerStep markers)
    optimizer_steps: list[tuple[float, float, str]] = field(default_factory=list)  # start, duration, name
    # Kineto's overhead events (CUPTI's buffer requests, CUDA's lazy loading...): name, start, duration
    overheads: list[tuple[str, float, float]] = field(default_factory=list)
    # annotations of torch.compile'd code on the host (## Call CompiledFxGraph ##): thread, start, duration
    compiled: list[tuple[int, float, float]] = field(default_factory=list)
    activities_whole: bool = False  # metadata Kineto writes after its last activity was read: none is missing
    header: Header = field(default_factory=Header)
    events: int = 0
    skipped_kinds: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    truncated: bool = False  # the file ends inside its events: what follows the last one read is unknown
    _cost_cache: dict[tuple[int, bytes, bytes], tuple[float, float, int]] = field(default_factory=dict)
    _op_of_ext: Optional[dict[int, int]] = None
    path: str = ""
    file_bytes: int = 0
    workers: int = 1  # processes that read it
    workers_memory_bytes: int = 0  # their memory (PSS) at their end, summed: beside this process's own

    def op_of_ext(self) -> dict[int, int]:
        """The framework op (its index) of each external id, the first where a trace repeats one; built once."""
        if self._op_of_ext is None:
            self._op_of_ext = dict(zip(reversed(self.o_ext), range(len(self.o_ext) - 1, -1, -1)))
            self._op_of_ext.pop(-1, None)
        return self._op_of_ext

    def intern(self, name: str) -> int:
        i = self._name_ids.get(name)
        if i is None:
            i = self._name_ids[name] = len(self.names)
            self.names.append(name)
        return i


def _tid(value: Union[int, str]) -> int:
    if isinstance(value, int):
        return value
    digits = "".join(ch for ch in str(value) if ch.isdigit())
    return int(digits) if digits else -1


_NO_ARGS = Args()


def _costs(cols: Columns, names: list[int], ops: list[Event], args: list[Args]) -> list[tuple[float, float, int]]:
    """op_cost of each op, cached by (op, shapes, dtypes): training steps repeat the same shapes every step."""
    cache = cols._cost_cache
    blank = cols.intern("")
    out = []
    for n, e, a in zip(names, ops, args):
        dims = a.dims
        if not len(dims):
            out.append(((a.flops or 0.0), 0.0, blank))
            continue
        key = (n, bytes(dims), bytes(a.types))
        hit = cache.get(key)
        if hit is None:
            try:
                flops, nbytes, dtype = op_cost(e.name, _raw_list.decode(dims),
                                               _raw_list.decode(a.types) if len(a.types) else [])
            except msgspec.DecodeError:
                flops, nbytes, dtype = 0.0, 0.0, ""
            hit = cache[key] = (flops, nbytes, cols.intern(dtype))
        out.append((a.flops, hit[1], hit[2]) if a.flops else hit)
    return out


def _name_ids(cols: Columns, events: list[Event]) -> list[int]:
    """Each event's interned name (a dict lookup each; new names added)."""
    get = cols._name_ids.get
    ids = [get(e.name) for e in events]
    if None in ids:
        ids = [i if i is not None else cols.intern(e.name) for i, e in zip(ids, events)]
    return ids  # type: ignore[return-value]


def _tids(events: list[Event]) -> list[int]:
    return [t if type(t) is int else _tid(t) for t in [e.tid for e in events]]


def _add(cols: Columns, events: list[Event]) -> None:
    """Append a decoded chunk to the columns, one category at a time (list comprehensions and
    array.extend: an append per field per event would cost more than the JSON decode)."""
    gpu, rt, ops = [], [], []
    skipped = cols.skipped_kinds
    metadata = False
    for e in events:
        cat = e.cat
        if e.ph != "X":
            key = cat or e.ph
            skipped[key] = skipped.get(key, 0) + 1
            metadata = metadata or e.ph == "M"
        elif cat in GPU_CATS:
            gpu.append(e)
        elif cat in RUNTIME_CATS:
            rt.append(e)
        elif cat == "cpu_op":
            ops.append(e)
        elif cat == "user_annotation" and e.name.startswith("ProfilerStep#"):
            cols.steps.append((e.name, e.ts, e.dur))
        elif cat == "user_annotation" and e.name.startswith("Optimizer.step#"):
            cols.optimizer_steps.append((e.ts, e.dur, e.name))
        elif cat == "user_annotation" and e.name.startswith(COMPILED_ANNOTATIONS):
            cols.compiled.append((_tid(e.tid), e.ts, e.dur))
        elif cat == "overhead":
            cols.overheads.append((e.name, e.ts, e.dur))
        else:
            key = cat or e.ph
            skipped[key] = skipped.get(key, 0) + 1
    if gpu or rt or metadata:
        cols.activities_whole = _metadata_last(events) if metadata else False
    if gpu:
        args = [e.args or _NO_ARGS for e in gpu]
        cols.g_ts.extend([e.ts for e in gpu])
        cols.g_dur.extend([e.dur for e in gpu])
        cols.g_name.extend(_name_ids(cols, gpu))
        cols.g_kind.extend([GPU_CATS[e.cat] for e in gpu])
        cols.g_dev.extend([a.device if a.device is not None else _tid(e.pid) for e, a in zip(gpu, args)])
        cols.g_stream.extend([a.stream if a.stream is not None else _tid(e.tid) for e, a in zip(gpu, args)])
        cols.g_corr.extend([a.correlation if a.correlation is not None else -1 for a in args])
        cols.g_ext.extend([a.external_id if a.external_id is not None else -1 for a in args])
        cols.g_bytes.extend([a.nbytes or 0 for a in args])
        cols.g_bpsm.extend([a.blocks_per_sm if a.blocks_per_sm is not None else -1.0 for a in args])
    if rt:
        cols.r_ts.extend([e.ts for e in rt])
        cols.r_dur.extend([e.dur for e in rt])
        cols.r_name.extend(_name_ids(cols, rt))
        cols.r_tid.extend(_tids(rt))
        cols.r_corr.extend([a.correlation if a.correlation is not None else -1
                            for a in [e.args or _NO_ARGS for e in rt]])
    if ops:
        args = [e.args or _NO_ARGS for e in ops]
        names = _name_ids(cols, ops)
        costs = _costs(cols, names, ops, args)
        cols.o_ts.extend([e.ts for e in ops])
        cols.o_dur.extend([e.dur for e in ops])
        cols.o_name.extend(names)
        cols.o_tid.extend(_tids(ops))
        cols.o_ext.extend([a.external_id if a.external_id is not None else -1 for a in args])
        cols.o_flops.extend([c[0] for c in costs])
        cols.o_bytes.extend([c[1] for c in costs])
        cols.o_dtype.extend([c[2] for c in costs])
    cols.events += len(events)


def _metadata_last(events: list[Event]) -> bool:
    """Whether metadata (which Kineto writes after its activities) follows the chunk's last activity."""
    for e in reversed(events):
        if e.ph == "M":
            return True
        if e.cat in GPU_CATS or e.cat in RUNTIME_CATS:
            return False
    return False


def load(path: str | Path) -> Columns:
    """The trace's columns, read in one stream (`load_parallel.read` reads a large file on several cores)."""
    path = Path(path)
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
                cols.problems.append(f"the compressed file is cut or corrupt after {fh.read_bytes / 1e6:.1f} MB of "
                                     f"JSON ({fh.problem}): the analysis covers what came before")
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


def _stream(fh: BinaryIO, cols: Columns, path: Path) -> None:
    head = fh.read(BLOCK_BYTES)
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
    between = head[bracket + 1: first] if first >= 0 else b""
    if first < 0 or between.strip():
        _whole_file(head + fh.read(), cols, path)
        return
    try:
        cols.header = _header.decode(head[:key] + b'"traceEvents": []}')
    except msgspec.DecodeError:
        cols.problems.append("the trace header is not valid JSON; device properties are unknown")
    buf = bytearray(head[first:])
    offset = first
    while True:
        block = fh.read(BLOCK_BYTES)
        if not block:
            break
        buf += block
        cut = buf.rfind(EVENT_START)
        if cut <= 0:
            continue
        _decode_in_place(buf, cut, cols, path, offset)
        offset += cut
        del buf[:cut]
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
        cols.problems.append(f"the trace is truncated inside traceEvents; the analysis covers the {cols.events} "
                             "events before the cut")
        return
    _decode_events(bytes(buf[:end]), cols, path, offset)


def _decode_in_place(buf: bytearray, cut: int, cols: Columns, path: Path, offset: int) -> None:
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
        events = _event_list.decode(view[: last + 1])
    except msgspec.ValidationError as exc:
        raise TraceError(f"{path}: an event near byte {offset} is not a Kineto event: {exc}") from None
    except msgspec.DecodeError as exc:
        raise TraceError(f"{path}: corrupt JSON near byte {offset}: {exc}") from None
    finally:
        view.release()
    _add(cols, events)


def _decode_events(chunk: bytes, cols: Columns, path: Path, offset: int) -> None:
    body = chunk.rstrip()
    if body.endswith(b","):
        body = body[:-1]
    try:
        events = _event_list.decode(b"[" + body + b"]")
    except msgspec.ValidationError as exc:
        raise TraceError(f"{path}: an event near byte {offset} is not a Kineto event: {exc}") from None
    except msgspec.DecodeError as exc:
        raise TraceError(f"{path}: corrupt JSON near byte {offset}: {exc}") from None
    _add(cols, events)


def _whole_file(data: bytes, cols: Columns, path: Path) -> None:
    try:
        whole = _whole.decode(data)
    except msgspec.ValidationError as exc:
        raise TraceError(f"{path}: not a Kineto trace: {exc}") from None
    except msgspec.DecodeError as exc:
        raise TraceError(f"{path}: corrupt or truncated JSON: {exc}") from None
    cols.header = Header(whole.schemaVersion, whole.deviceProperties, whole.distributedInfo,
                         whole.baseTimeNanoseconds, whole.cuda_runtime_version)
    _add(cols, whole.traceEvents)
