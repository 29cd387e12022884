"""Reading a trace fast gives the columns of reading it plainly: the stream's reused buffer with events longer
than a block, a gzip stream, a header longer than a block, flows of a category Kineto did not write, the large
traces the speed benchmark builds, and ops that never launch GPU work left uncosted without changing any kernel's
cost."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

from gputriage.trace import load as L
from gputriage.trace.load import load

ROOT = Path(__file__).parent.parent
TRACES = Path(__file__).parent / "fixtures" / "h200" / "traces"
COLUMNS = (
    "g_ts",
    "g_dur",
    "g_name",
    "g_kind",
    "g_corr",
    "g_ext",
    "r_ts",
    "r_name",
    "r_corr",
    "o_ts",
    "o_name",
    "o_tid",
    "o_ext",
)


def _named(cols: L.Columns) -> dict:
    names = {"g_name", "r_name", "o_name"}
    named = {k: [cols.names[i] for i in getattr(cols, k)] if k in names else list(getattr(cols, k)) for k in COLUMNS}
    costs = [cols.cost(i) for i in range(len(cols.o_ts))]
    return {**named, "o_cost": [(flops, nbytes, cols.names[dtype]) for flops, nbytes, dtype in costs]}


def _plain(path: Path) -> dict:
    """The columns of the file decoded whole, in one piece (the compact layout's path)."""
    data = json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes())
    cols = L.Columns()
    L._whole_file(json.dumps(data, separators=(",", ":")).encode(), cols, path)
    return _named(cols)


@pytest.mark.parametrize("block", [4096, 64 * 1024, 2 * 2**20])
def test_blocks_of_any_size_give_the_columns_of_the_whole_file(tmp_path, monkeypatch, block):
    # 4 KB blocks are shorter than many events (a kernel's templated name runs to 600 bytes, an op's shapes more):
    # the reused buffer grows to hold them
    raw = gzip.decompress((TRACES / "launch_bound.json.gz").read_bytes())
    raw = raw.replace(b'"name": "std::enable_if', b'"name": "' + b"x" * 20_000 + b"std::enable_if", 1)  # 20 KB
    path = tmp_path / "t.json"
    path.write_bytes(raw)
    monkeypatch.setattr(L, "BLOCK_BYTES", block)
    assert _named(load(path)) == _plain(path)
    gz = tmp_path / "t.json.gz"  # a gzip stream has no readinto: read and copied in
    gz.write_bytes(gzip.compress(raw, 1))
    assert _named(load(gz)) == _named(load(path))


def test_ops_that_never_launch_gpu_work_launch_none_in_any_recorded_trace():
    # they are left uncosted; no kernel in the recorded traces was launched by one
    for path in TRACES.glob("*.json.gz"):
        cols = load(path)
        launched = set(cols.g_ext)
        names = {cols.names[n] for n, e in zip(cols.o_name, cols.o_ext) if e in launched}
        assert not names & L.NEVER_LAUNCH, path.name


def _builder():
    spec = importlib.util.spec_from_file_location("make_big_trace", ROOT / "benchmarks" / "make_big_trace.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_benchmarks_big_trace_is_the_recorded_one_repeated(tmp_path):
    out = tmp_path / "big.json"
    _builder().build(TRACES / "healthy.json.gz", out, 3)
    one, three = load(TRACES / "healthy.json.gz"), load(out)
    assert len(three.g_ts) == 3 * len(one.g_ts) and len(three.o_ts) == 3 * len(one.o_ts)
    assert len(set(three.g_corr)) == 3 * len(set(one.g_corr))  # ids offset per copy: launches still pair up
    span = max(one.g_ts) - min(one.g_ts)
    assert min(three.g_ts[len(one.g_ts) :]) > min(one.g_ts) + span  # each copy after the one before
    assert b'\n  {\n    "ph": "X"' in out.read_bytes()[:200_000]  # Kineto's own layout: an event per "\n  {"


def test_a_flow_of_a_category_kineto_did_not_write_is_counted_under_it(tmp_path):
    # flows are decoded as Kineto's own categories; a chunk holding another is decoded again with any
    raw = gzip.decompress((TRACES / "launch_bound.json.gz").read_bytes())
    path, other = tmp_path / "t.json", tmp_path / "other.json"
    path.write_bytes(raw)
    other.write_bytes(raw.replace(b'"cat": "ac2g"', b'"cat": "my_link"', 7))
    before, after = load(path), load(other)
    assert after.skipped_kinds["my_link"] == 7
    assert after.skipped_kinds["ac2g"] == before.skipped_kinds["ac2g"] - 7
    assert _named(after) == _named(before)


def test_a_header_longer_than_a_read_block_gives_the_same_columns(tmp_path):
    # the first read (2 MB) holds the header; the events follow in 256 KB blocks
    data = json.loads(gzip.decompress((TRACES / "item_sync.json.gz").read_bytes()))
    raw = gzip.decompress((TRACES / "item_sync.json.gz").read_bytes())
    pad = json.dumps([{"name": "x" * 1000}] * 600).encode()  # 600 KB of device properties
    path = tmp_path / "t.json"
    path.write_bytes(raw.replace(b'"deviceProperties": [', b'"deviceProperties": [' + pad[1:-1] + b",", 1))
    assert L.HEAD_BYTES > path.read_bytes().index(L.ARRAY_KEY) > L.BLOCK_BYTES
    cols = load(path)
    assert _named(cols) == _named(load(TRACES / "item_sync.json.gz"))
    assert len(cols.header.deviceProperties) == 600 + len(data["deviceProperties"])
