"""The trace reader's filing in C (`trace/_filing.c`) gives exactly the columns, names, shapes and counts of the
Python filing, on every recorded trace and on chunks of any mix of events; whatever it cannot file as Python
would (a null, a named thread, a number beyond its column, a category Kineto did not write), Python files."""

from __future__ import annotations

import json
import math
import os
from array import array
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gputriage.trace import columns as C
from gputriage.trace import filing as F
from gputriage.trace import load as L
from gputriage.trace.events import Complete

TRACES = Path(__file__).parent / "fixtures" / "h200" / "traces"
FILING = F._filing

needs_filing = pytest.mark.skipif(FILING is None, reason="the C filing is not built here (no compiler at install)")


def test_the_c_filing_is_built_where_ci_requires_it():
    if os.environ.get("GPUTRIAGE_REQUIRE_FILING") != "1":
        pytest.skip("GPUTRIAGE_REQUIRE_FILING is not set")
    assert FILING is not None, "gputriage.trace._filing was not built: `pip install -e .` needs a C compiler"


def _state(cols: C.Columns) -> dict[str, Any]:
    """Everything a read leaves in the columns, in comparable form (arrays as their values, dicts in order)."""
    out: dict[str, Any] = {}
    for key, value in vars(cols).items():
        if key == "header":
            continue
        if isinstance(value, array):
            out[key] = (value.typecode, value.tolist())
        elif isinstance(value, dict):
            out[key] = list(value.items())
        else:
            out[key] = value
    return out


def _nan_safe(state: dict[str, Any]) -> str:
    return json.dumps(state, default=repr)  # NaN == NaN as text


@needs_filing
@pytest.mark.parametrize("trace", sorted(TRACES.glob("*.json.gz")), ids=lambda p: p.name.split(".")[0])
def test_every_recorded_trace_is_filed_in_c_as_in_python(trace, monkeypatch):
    filed: list[bool] = []

    def counting(*args: Any) -> Any:
        out = FILING.file_chunk(*args)
        filed.append(out is not None)
        return out

    monkeypatch.setattr(F, "_filing", type("Counting", (), {"file_chunk": staticmethod(counting)}))
    fast = L.load(trace)
    monkeypatch.setattr(F, "_filing", None)
    plain = L.load(trace)
    assert filed and all(filed), f"{filed.count(False)} of {len(filed)} chunks left to Python"
    assert _state(fast) == _state(plain)


def _event(draw: Any) -> dict[str, Any]:
    cat = draw(
        st.sampled_from(
            ["cpu_op", "cpu_op", "kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "ac2g"]
            + ["fwdbwd", "user_annotation", "python_function", "", "overhead", "my_own_category", "runtime", "driver"]
        )
    )
    number = st.one_of(st.floats(-1e6, 1e12), st.integers(-(2**40), 2**40))
    odd = st.sampled_from([None, 2**63 - 1, -(2**31) - 1, 1e39])  # a null, numbers beyond a column
    maybe = lambda usual: draw(odd) if draw(st.integers(0, 40)) == 0 else draw(usual)
    if cat in ("ac2g", "fwdbwd"):
        return {"ph": draw(st.sampled_from(["s", "f"])), "id": 1, "ts": 1.0, "cat": cat, "name": cat}
    if draw(st.integers(0, 30)) == 0:
        return {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "python"}}
    event: dict[str, Any] = {"ph": "X", "cat": cat, "name": draw(st.sampled_from(["aten::mm", "aten::view", "é", "k"]))}
    event["pid"] = maybe(st.sampled_from([0, 1, 7]))
    event["tid"] = maybe(st.one_of(st.integers(0, 2**31), st.just("stream 7")))
    event["ts"] = draw(number)  # a null start is no Kineto event (the decode refuses it)
    event["dur"] = draw(number)
    if draw(st.booleans()):
        args: dict[str, Any] = {}
        for key, value in (
            ("External id", st.integers(-1, 100)),
            ("correlation", st.integers(-1, 100)),
            ("device", st.integers(-1, 3)),
            ("flops", st.sampled_from([0.0, 2.0, 2e9])),
            ("blocks per SM", st.floats(0, 10)),
            ("Input Dims", st.sampled_from([[], [[1, 2]], [[3, 4], []]])),
            ("Input type", st.sampled_from([[], ["float"], ["c10::Half", ""]])),
        ):
            if draw(st.booleans()):
                args[key] = maybe(value)
        event["args"] = args
    return event


@needs_filing
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_chunk_is_filed_in_c_as_in_python(data):
    chunks = [[_event(data.draw) for _ in range(data.draw(st.integers(0, 12)))] for _ in range(3)]
    outcomes = []
    for filing in (FILING, None):
        F._filing = filing
        cols = C.Columns()
        try:
            for chunk in chunks:
                events, kineto = L._decode(msgspec.json.encode(chunk), "t.json", 0)
                C.append(cols, events, kineto)
            outcomes.append(_nan_safe(_state(cols)))
        except (L.TraceError, OverflowError) as exc:  # what Python refuses, it refuses either way
            outcomes.append(type(exc).__name__)
        finally:
            F._filing = FILING
    assert outcomes[0] == outcomes[1]


@needs_filing
def test_what_c_cannot_file_as_python_would_is_left_to_python():
    kernel = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.0}
    op = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.0}
    args = lambda **kw: {"args": kw}
    for odd in (
        {**op, "tid": "thread 7"},  # a named thread: Python takes its digits
        {**op, **args(**{"External id": None})},  # a null: Python mends it
        {**kernel, **args(device=2**40)},  # beyond its column
        {**op, "cat": "my_own_category"},  # a category Kineto did not write: decoded apart, still filed in C
    ):
        events, kineto = L._decode(msgspec.json.encode([kernel, odd]), "t.json", 0)
        filed = FILING.file_chunk(events, F.CODES, {}, [], {}, [], F.NEVER_LAUNCH)
        if odd["cat"] == "my_own_category":
            assert filed is not None and [e.cat for e in filed[0]] == ["my_own_category"]
        else:
            assert filed is None, odd
    # a NaN start (JSON has none; a decoder of another format could): the least start is Python's `min`'s
    nan = Complete(cat="cpu_op", name="aten::mm", ts=math.nan)
    assert FILING.file_chunk([nan], F.CODES, {}, [], {}, [], F.NEVER_LAUNCH) is None
