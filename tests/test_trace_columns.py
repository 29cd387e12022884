"""The columns a trace is read into, and the lookups the analyses make on them: values packed in C as
`array.fromlist` would take them, the first host event's time kept as the columns fill, each GPU activity's
launching op (the first op of its id), an op's cost cached under its shapes and dtypes joined, and the optimizer
step holding a moment."""

from __future__ import annotations

import json
import math
from array import array
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from gputriage.trace import columns as C
from gputriage.trace.load import load
from gputriage.trace.spans import Spans
from gputriage.trace.thread_ops import ThreadOps

TRACES = Path(__file__).parent / "fixtures" / "h200" / "traces"


def test_values_go_into_a_column_as_fromlist_takes_them_and_the_rest_are_mended():
    floats = array("d")
    assert C._extend(floats, [1, 2.5, True], lambda i: 0.0) == [1, 2.5, True]
    assert list(floats) == [1.0, 2.5, 1.0]
    single = array("f")  # beyond a float32: infinite, as fromlist stores it (struct.pack refuses it)
    C._extend(single, [1.5, 1e39, -1.0], lambda i: -1.0)
    assert list(single) == [1.5, math.inf, -1.0]
    ids = array("q")  # a thread named rather than numbered, a null, a boolean: each mended
    mended = C._extend(ids, [3, "thread 7", None, True, 2**40], lambda i: -2)
    assert mended == [3, -2, -2, -2, 2**40] == list(ids)


def test_the_first_host_event_is_the_least_start_read_or_else_the_columns_least():
    cols = load(TRACES / "launch_bound.json.gz")
    assert cols.least("o_ts") == min(cols.o_ts) and cols.least("r_ts") == min(cols.r_ts)
    cols.o_ts.append(min(cols.o_ts) - 5.0)  # filled past the reader: taken from the column itself
    assert cols.least("o_ts") == min(cols.o_ts)
    assert C.Columns().least("o_ts") == math.inf


def test_each_gpu_activity_finds_the_first_op_of_its_id():
    cols = C.Columns()
    cols.o_ext.extend([5, 7, 5, -1, 9, 7])
    cols.g_ext.extend([5, 9, -1, 8, 7])
    assert cols.gpu_ops() == [0, 4, None, None, 1]
    for path in (TRACES / "item_sync.json.gz", TRACES / "run_profile_cpu_optimizer.json.gz"):
        cols = load(path)
        first: dict[int, int] = {}
        for i, e in enumerate(cols.o_ext):
            first.setdefault(e, i)
        assert cols.gpu_ops() == [first.get(e) if e != -1 else None for e in cols.g_ext], path.name


def _op(name: str, ext: int, dims: list, types: list) -> dict:
    args = {"External id": ext, "Input Dims": dims, "Input type": types}
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": float(ext), "dur": 0.5, "args": args}


def test_ops_of_one_name_and_shapes_are_costed_by_their_own_dtypes(tmp_path):
    ops = [
        _op("aten::mul", 1, [[4, 4], [4, 4]], ["float", "float"]),
        _op("aten::mul", 2, [[4, 4], [4, 4]], ["c10::Half", "c10::Half"]),
        _op("aten::mul", 3, [[4, 4], [4, 4]], ["float", "float"]),
        _op("aten::mul", 4, [[4], [4, 4, 4]], ["float", "float"]),
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": ops}))
    cols = load(path)
    costs = [cols.cost(i) for i in range(len(cols.o_ts))]
    assert [cols.names[d] for _, _, d in costs] == ["float", "c10::Half", "float", "float"]
    assert [b for _, b, _ in costs] == [3 * 16 * 4.0, 3 * 16 * 2.0, 3 * 16 * 4.0, (4 + 64 + 64) * 4.0]


@given(
    st.lists(st.tuples(st.integers(0, 50), st.integers(0, 20)), max_size=12),
    st.lists(st.integers(-5, 80), max_size=20),
)
def test_the_optimizer_step_holding_a_moment_is_the_first_listed(spans, moments):
    steps = [(float(start), float(length), f"Optimizer.step#{i}") for i, (start, length) in enumerate(spans)]
    found = Spans(steps)
    for t in map(float, moments):
        scan = next((name for start, length, name in steps if start <= t <= start + length), None)
        assert found.first_holding(t) == scan


@given(
    st.lists(st.tuples(st.integers(0, 30), st.integers(0, 40)), max_size=15),
    st.lists(st.tuples(st.integers(-10, 700), st.integers(-5, 200)), max_size=25),
    st.booleans(),
)
def test_the_time_top_level_ops_cover_is_the_same_whatever_order_it_is_asked_in(ops, queries, in_order):
    # top-level ops: each starts where the one before it ended, or later (gaps and durations from the lists)
    top, t = ThreadOps(), 0.0
    for gap, length in ops:
        t += gap
        top.starts.append(t)
        top.ends.append(t + length)
        top.names.append(0)
        top.before.append(top.before[-1] + length)
        t += length
    asked = [(float(a), float(a + w)) for a, w in queries]
    if in_order:  # as the sweep through a window asks: by start
        asked.sort()
    for a, b in asked:
        spans = zip(top.starts, top.ends)
        plain = sum(max(0.0, min(b, e) - max(a, s)) for s, e in spans) if b > a else 0.0
        assert math.isclose(top.coverage(a, b), plain, abs_tol=1e-9)
