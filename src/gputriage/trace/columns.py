"""A trace as columns (arrays of numbers, names interned), and how a chunk of decoded events is appended to them.

A chunk at a time, a category at a time: one pass sorts its events by category, then each field is read with a
list comprehension and handed to its array whole (`_fill`). An op's recorded shapes are only interned as they are
read: costing them is left to the analysis, for the few ops that launched GPU work. An absent argument is already
the value its column keeps for it (`events.Args`), so reading a field is a bare attribute load: on CPython 3.11 and
later that is faster than `operator.attrgetter`, `itertools.compress` or a branch per event.

Where the package was installed with a C compiler, `filing` does the same in C for the chunks it can.
"""

from __future__ import annotations

from array import array
from collections import Counter
from itertools import compress
from operator import attrgetter
from struct import error as StructError
from struct import pack
from typing import Any, Callable, Optional, Sequence, Union

import msgspec

from gputriage.trace.events import (
    COMPILED_ANNOTATIONS,
    GPU_CATS,
    LOADER_ANNOTATIONS,
    RUNTIME_CATS,
    Args,
    Header,
    _raw_list,
)
from gputriage.trace.filing import FLOW_CATS, file_in_c
from gputriage.trace.op_cost import NEVER_LAUNCH, op_cost, split_shape
from gputriage.trace.spans import Spans


class Columns:
    """The trace as columns. Times in microseconds (the trace's own unit). A plain class: a dataclass of this
    many fields costs its every start the compiling of its __init__."""

    def __init__(self, path: str = "", file_bytes: int = 0) -> None:
        self.names: list[str] = []
        self._name_ids: dict[str, int] = {}
        # GPU activities
        self.g_ts: array = array("d")
        self.g_dur: array = array("d")
        self.g_name: array = array("i")
        self.g_kind: array = array("b")
        self.g_dev: array = array("i")
        self.g_corr: array = array("q")
        self.g_ext: array = array("q")
        self.g_bpsm: array = array("f")  # blocks per SM (-1 unknown): < 1 leaves SMs idle
        # CUDA runtime/driver calls
        self.r_ts: array = array("d")
        self.r_dur: array = array("d")
        self.r_name: array = array("i")
        self.r_tid: array = array("q")
        self.r_corr: array = array("q")
        # framework ops
        self.o_ts: array = array("d")
        self.o_dur: array = array("d")
        self.o_name: array = array("i")
        self.o_tid: array = array("q")
        self.o_ext: array = array("q")
        self.o_shape: array = array("i")  # the op's recorded shapes: an index into `shapes`
        # each distinct (input dims and types, FLOPs the profiler counted) read, as `_shape_ids` writes it; the first
        # stands for the shapes of an op that never launches GPU work (NEVER_LAUNCH), which are not kept
        self.shapes: list[tuple[bytes, Optional[float]]] = [(b"", None)]
        # ProfilerStep#N spans on the host
        self.steps: list[tuple[str, float, float]] = []
        # Optimizer.step#... spans on the host (step boundaries when there are no ProfilerStep markers)
        self.optimizer_steps: list[tuple[float, float, str]] = []  # start, duration, name
        # Kineto's overhead events (CUPTI's buffer requests, CUDA's lazy loading...): name, start, duration
        self.overheads: list[tuple[str, float, float]] = []
        # annotations of torch.compile'd code on the host (## Call CompiledFxGraph ##): thread, start, duration
        self.compiled: list[tuple[int, float, float]] = []
        # a DataLoader handing out batches on the host (enumerate(DataLoader)#...__next__): thread, start, duration
        self.loading: list[tuple[int, float, float]] = []
        self.activities_whole: bool = False  # metadata Kineto writes after its last activity was read: none is missing
        self.header: Header = Header()
        self.events: int = 0
        self.skipped_kinds: dict[str, int] = {}
        self.problems: list[str] = []
        self.truncated: bool = False  # the file ends inside its events: what follows the last one read is unknown
        self._shape_ids: dict[Union[bytes, tuple[bytes, float]], int] = {}
        self._cost_cache: dict[tuple[int, int], tuple[float, float, int]] = {}
        self._op_of_ext: Optional[dict[int, int]] = None
        self._gpu_ops: Optional[list[Optional[int]]] = None
        self._gpu_costs: Optional[list[Optional[tuple[float, float, int]]]] = None
        self._optimizer_spans: Optional[Spans] = None
        self._least: dict[str, tuple[float, int]] = {}  # a column's least value read, of how many
        self.path: str = path
        self.file_bytes: int = file_bytes
        self.workers: int = 1  # processes that read it
        self.workers_memory_bytes: int = 0  # their memory (PSS) at their end, summed: beside this process's own

    def op_of_ext(self) -> dict[int, int]:
        """The framework op (its index) of each external id a GPU activity carries, the first where a trace repeats
        one; built once, over the ops picked in C."""
        if self._op_of_ext is None:
            wanted = set(self.g_ext)
            wanted.discard(-1)
            ext = self.o_ext
            ops = list(compress(range(len(ext)), map(wanted.__contains__, ext)))
            self._op_of_ext = dict(zip(reversed([ext[i] for i in ops]), reversed(ops)))
        return self._op_of_ext

    def gpu_ops(self) -> list[Optional[int]]:
        """The framework op (its index) that launched each GPU activity, None where none did; built once."""
        if self._gpu_ops is None:
            self._gpu_ops = list(map(self.op_of_ext().get, self.g_ext))
        return self._gpu_ops

    def gpu_costs(self) -> list[Optional[tuple[float, float, int]]]:
        """What the op that launched each GPU activity costs (`cost`), None where no op did; built once."""
        if self._gpu_costs is None:
            cache, names, shapes, costed = self._cost_cache, self.o_name, self.o_shape, self._costed
            self._gpu_costs = [
                None if op is None else cache.get(key := (names[op], shapes[op])) or costed(key)
                for op in self.gpu_ops()
            ]
        return self._gpu_costs

    def cost(self, op: int) -> tuple[float, float, int]:
        """An op's FLOPs, the bytes its tensors occupy and its dtype (interned), from its recorded shapes."""
        key = (self.o_name[op], self.o_shape[op])
        return self._cost_cache.get(key) or self._costed(key)

    def _costed(self, key: tuple[int, int]) -> tuple[float, float, int]:
        """`cost` of an op of this name and shapes, costed once: training steps repeat the same shapes every step."""
        name, shape = key
        dims, types, recorded = split_shape(self.shapes[shape])
        if shape == 0 or not dims:  # shapes not kept, or none recorded: the FLOPs the profiler counted, if any
            hit = ((recorded or 0.0) if shape else 0.0, 0.0, self.intern(""))
        else:
            try:
                flops, nbytes, dtype = op_cost(
                    self.names[name], _raw_list.decode(dims), _raw_list.decode(types) if types else []
                )
            except msgspec.DecodeError:
                flops, nbytes, dtype = 0.0, 0.0, ""
            hit = (recorded or flops, nbytes, self.intern(dtype))
        self._cost_cache[key] = hit
        return hit

    def optimizer_spans(self) -> Spans:
        """The optimizer steps, for which one holds a moment; built once."""
        if self._optimizer_spans is None:
            self._optimizer_spans = Spans([(ts, dur, name) for ts, dur, name in self.optimizer_steps])
        return self._optimizer_spans

    def least(self, column: str) -> float:
        """The least value of a column (infinite when empty): as the values were read, where the column holds just
        those (else from the column)."""
        values: array = getattr(self, column)
        least, count = self._least.get(column, (float("inf"), 0))
        return least if count == len(values) else min(values, default=float("inf"))

    def note_least(self, column: str, least: float, count: int) -> None:
        """The least of `count` values appended to a column."""
        before, counted = self._least.get(column, (float("inf"), 0))
        self._least[column] = (min(before, least), counted + count)

    def intern_shape(self, shape: tuple[bytes, Optional[float]]) -> int:
        """The index of an entry of `shapes` (that of shapes not kept, the only one with no NUL, at 0)."""
        joined, flops = shape
        if not joined:
            return 0
        key = (joined, flops) if flops else joined  # as `_shape_ids` keys it
        i = self._shape_ids.get(key)
        if i is None:
            i = self._shape_ids[key] = len(self.shapes)
            self.shapes.append(shape)
        return i

    def intern(self, name: str) -> int:
        i = self._name_ids.get(name)
        if i is None:
            i = self._name_ids[name] = len(self.names)
            self.names.append(name)
        return i


def _tid(value: Union[int, str]) -> int:
    """A thread id as an integer (a profiler that names its threads: the digits of the name)."""
    if isinstance(value, int):
        return value
    digits = "".join(ch for ch in str(value) if ch.isdigit())
    return int(digits) if digits else -1


_NO_ARGS = Args()
INTEGERS = frozenset("bBhHiIlLqQ")


def _fill(column: array, values: list[Any]) -> None:
    """Append values to a column whole, packed in C (`struct.pack` converts a value in a third of the time
    `array.fromlist` takes); where one will not go in, `fromlist` appends them or raises its own error (nothing
    appended)."""
    try:
        column.frombytes(pack(f"{len(values)}{column.typecode}", *values))
    except (StructError, OverflowError):  # OverflowError: beyond a float32, which fromlist takes as infinite
        column.fromlist(values)


def _extend(column: array, values: list[Any], mend: Callable[[int], Any]) -> list[Any]:
    """Append values to a column whole (`_fill`, nothing appended where one value will not go in); where one
    will not (a null, a thread named rather than numbered), append each value as is or as `mend(i)` makes it.
    The values appended."""
    try:
        _fill(column, values)
    except TypeError:
        kind = int if column.typecode in INTEGERS else (int, float)
        values = [v if isinstance(v, kind) and not isinstance(v, bool) else mend(i) for i, v in enumerate(values)]
        column.fromlist(values)
    return values


def _name_ids(cols: Columns, events: list[Any]) -> list[int]:
    """Each event's interned name (a dict lookup each; new names added)."""
    get = cols._name_ids.get
    ids = [get(e.name) for e in events]
    if None in ids:
        ids = [i if i is not None else cols.intern(e.name) for i, e in zip(ids, events)]
    return ids  # type: ignore[return-value]


def _arguments(events: list[Any]) -> list[Args]:
    args = [e.args for e in events]
    return args if None not in args else [a if a is not None else _NO_ARGS for a in args]


def append(cols: Columns, events: list[Any], kineto: bool = True) -> None:
    """Append a decoded chunk to the columns (module doc). `kineto`: decoded as Kineto's phases (only complete
    events carry a category the columns take); else generic events, whose other phases are left out here."""
    filed = file_in_c(cols, events) if kineto else None
    if filed is not None:  # the columns filled; what is left, as below
        rest, flow_counts, activities = filed
        if flow_counts:
            _skipped(cols, flow_counts)
        metadata = _rest(cols, rest) if rest else False
        if activities or metadata:
            cols.activities_whole = _metadata_last(events) if metadata else False
        cols.events += len(events)
        return
    gpu, rt, ops, flows, rest = [], [], [], [], []
    for e in events:  # by how many there are of each
        cat = e.cat
        if cat == "cpu_op":
            ops.append(e)
        elif cat in FLOW_CATS:
            flows.append(e)
        elif cat in RUNTIME_CATS:
            rt.append(e)
        elif cat in GPU_CATS:
            gpu.append(e)
        else:
            rest.append(e)
    if not kineto and any(e.ph != "X" for e in ops + gpu + rt):  # generic events: complete ones only
        rest += [e for e in ops + gpu + rt if e.ph != "X"]
        ops, gpu, rt = ([e for e in x if e.ph == "X"] for x in (ops, gpu, rt))
    if flows:  # only counted
        _skipped(cols, Counter(map(_category, flows)))
    metadata = _rest(cols, rest) if rest else False
    if gpu or rt or metadata:
        cols.activities_whole = _metadata_last(events) if metadata else False
    if gpu:
        _gpu(cols, gpu)
    if rt:
        starts = _extend(cols.r_ts, [e.ts for e in rt], lambda i: 0.0)
        cols.note_least("r_ts", min(starts), len(starts))
        _extend(cols.r_dur, [e.dur for e in rt], lambda i: 0.0)
        _fill(cols.r_name, _name_ids(cols, rt))
        _extend(cols.r_tid, [e.tid for e in rt], lambda i: _tid(rt[i].tid))
        _extend(cols.r_corr, [a.correlation for a in _arguments(rt)], lambda i: -1)
    if ops:
        args = _arguments(ops)
        ids = _name_ids(cols, ops)
        starts = _extend(cols.o_ts, [e.ts for e in ops], lambda i: 0.0)
        _extend(cols.o_dur, [e.dur for e in ops], lambda i: 0.0)
        _fill(cols.o_name, ids)
        _extend(cols.o_tid, [e.tid for e in ops], lambda i: _tid(ops[i].tid))
        _extend(cols.o_ext, [a.external_id for a in args], lambda i: -1)
        cols.note_least("o_ts", min(starts), len(starts))
        _fill(cols.o_shape, _shape_ids(cols, ids, args))
    cols.events += len(events)


def _gpu(cols: Columns, gpu: list[Any]) -> None:
    args = _arguments(gpu)
    _extend(cols.g_ts, [e.ts for e in gpu], lambda i: 0.0)
    _extend(cols.g_dur, [e.dur for e in gpu], lambda i: 0.0)
    _fill(cols.g_name, _name_ids(cols, gpu))
    _fill(cols.g_kind, [GPU_CATS[e.cat] for e in gpu])
    dev = [a.device for a in args]
    if -1 in dev or None in dev:  # no device in the arguments: the process id is the device's
        dev = [d if isinstance(d, int) and d >= 0 else _tid(e.pid) for d, e in zip(dev, gpu)]
    _extend(cols.g_dev, dev, lambda i: -1)
    _extend(cols.g_corr, [a.correlation for a in args], lambda i: -1)
    _extend(cols.g_ext, [a.external_id for a in args], lambda i: -1)
    _extend(cols.g_bpsm, [a.blocks_per_sm for a in args], lambda i: -1.0)


SPECIAL = frozenset({"user_annotation", "overhead", ""})  # of the rest, those read one by one

_category = attrgetter("cat")


def _rest(cols: Columns, rest: list[Any]) -> bool:
    """The events the columns do not take, but the flow arrows (counted apart): counted by category (phase where
    there is none), the annotations that mark steps and compiled code and Kineto's overhead events kept. Whether
    metadata was among them."""
    counts = Counter([e.cat for e in rest])
    metadata = False
    for e in [e for e in rest if e.cat in SPECIAL]:
        cat = e.cat
        if not cat:  # counted by its phase
            counts[""] -= 1
            counts[e.ph] += 1
            metadata = metadata or e.ph == "M"
        elif e.ph != "X":
            continue
        elif cat == "overhead":
            cols.overheads.append((e.name, e.ts, e.dur))
            counts[cat] -= 1
        elif e.name.startswith("ProfilerStep#"):
            cols.steps.append((e.name, e.ts, e.dur))
            counts[cat] -= 1
        elif e.name.startswith("Optimizer.step#"):
            cols.optimizer_steps.append((e.ts, e.dur, e.name))
            counts[cat] -= 1
        elif e.name.startswith(COMPILED_ANNOTATIONS):
            cols.compiled.append((_tid(e.tid), e.ts, e.dur))
            counts[cat] -= 1
        elif e.name.startswith(LOADER_ANNOTATIONS):
            cols.loading.append((_tid(e.tid), e.ts, e.dur))
            counts[cat] -= 1
    _skipped(cols, counts)
    return metadata


def _skipped(cols: Columns, counts: Counter[str]) -> None:
    skipped = cols.skipped_kinds
    for key, n in counts.items():
        if n > 0:
            skipped[key] = skipped.get(key, 0) + n


def _metadata_last(events: list[Any]) -> bool:
    """Whether metadata (which Kineto writes after its activities) follows the chunk's last activity."""
    for e in reversed(events):
        if e.ph == "M":
            return True
        if e.cat in GPU_CATS or e.cat in RUNTIME_CATS:
            return False
    return False


def _shape_ids(cols: Columns, names: list[int], args: Sequence[Args]) -> list[int]:
    """Each op's recorded shapes, interned into `Columns.shapes` (costed only for the ops that launched GPU work,
    when the analysis asks: `Columns.cost`). Dims and types are joined by a NUL, which JSON text never holds; the
    FLOPs the profiler counted (for a few ops) join them in the key where there are some."""
    ids, shapes = cols._shape_ids, cols.shapes
    never = {cols._name_ids[n] for n in NEVER_LAUNCH if n in cols._name_ids}
    out: list[int] = []
    add, get, join = out.append, ids.get, b"\0".join
    for n, a in zip(names, args):
        dims = a.dims
        if dims and n in never:
            add(0)
            continue
        joined = join((dims, a.types))
        flops = a.flops
        key = (joined, flops) if flops else joined
        i = get(key)
        if i is None:
            i = ids[key] = len(shapes)
            shapes.append((joined, flops))
        add(i)
    return out
