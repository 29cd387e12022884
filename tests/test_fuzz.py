"""Generated malformed input for every reader (snapshot, trace, budget, store): each answers with its
own one-line error or a (partial) analysis — never another exception, which the command would turn
into exit 4 — within a time bound."""

from __future__ import annotations

import gzip
import json
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import H200_SNAPSHOT
from gputriage import api
from gputriage.api import GputriageError
from gputriage.diagnosis.budget import KEYS, BudgetError, load_budget
from gputriage.model.snapshot import Snapshot, SnapshotError

TRACES = Path(__file__).parent / "fixtures" / "h200" / "traces"
SMALL_TRACE = gzip.decompress((TRACES / "item_sync.json.gz").read_bytes())
SNAPSHOT = H200_SNAPSHOT.read_bytes()
FUZZ = settings(max_examples=60, deadline=3000, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                       HealthCheck.too_slow])

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                       max_size=4), max_leaves=20)


def mutations(original: bytes) -> st.SearchStrategy[bytes]:
    """The file cut anywhere, a stretch overwritten with other bytes, or bytes inserted."""
    n = len(original)
    cut = st.integers(0, n).map(lambda k: original[:k])
    overwrite = st.tuples(st.integers(0, n - 1), st.binary(min_size=1, max_size=64)).map(
        lambda t: original[:t[0]] + t[1] + original[t[0] + len(t[1]):])
    insert = st.tuples(st.integers(0, n), st.binary(min_size=1, max_size=64)).map(
        lambda t: original[:t[0]] + t[1] + original[t[0]:])
    return cut | overwrite | insert


def _file(data: bytes, suffix: str) -> Path:
    fh = tempfile.NamedTemporaryFile(suffix=suffix, delete=False)
    fh.write(data)
    fh.close()
    return Path(fh.name)


@FUZZ
@given(mutations(SNAPSHOT))
def test_snapshot_bytes_mangled(data):
    path = _file(data, ".json")
    try:
        Snapshot.load(path)
    except SnapshotError:
        pass
    finally:
        path.unlink()


@FUZZ
@given(st.fixed_dictionaries({"schema": st.just("gputriage.snapshot"), "version": st.just(1)},
                             optional={"facts": json_values, "taken_at": json_values, "raw": json_values,
                                       "hostname": json_values}))
def test_snapshot_shapes(doc):
    path = _file(json.dumps(doc).encode(), ".json")
    try:
        report = api.check(path)
        assert report.schema == "gputriage.check"
    except GputriageError:
        pass
    finally:
        path.unlink()


@FUZZ
@given(mutations(SMALL_TRACE), st.booleans())
def test_trace_bytes_mangled(data, packed):
    path = _file(gzip.compress(data) if packed else data, ".json.gz" if packed else ".json")
    try:
        report = api.analyze_trace([path])
        assert report.ranks
    except GputriageError:
        pass
    finally:
        path.unlink()


@FUZZ
@given(mutations(gzip.compress(SMALL_TRACE)))
def test_gzip_bytes_mangled(data):
    path = _file(data, ".json.gz")
    try:
        api.analyze_trace([path])
    except GputriageError:
        pass
    finally:
        path.unlink()


toml_values = st.one_of(st.integers(-10**6, 10**6).map(str), st.floats(allow_nan=True).map(repr),
                        st.booleans().map(lambda b: "true" if b else "false"), st.text(max_size=10).map(json.dumps),
                        st.just("[1, 2]"), st.just("{a = 1}"), st.just("nan"), st.just("inf"), st.just("-inf"))


@FUZZ
@given(st.lists(st.tuples(st.sampled_from([*KEYS, "severity", "bogus"]), toml_values), max_size=6), st.booleans(),
       st.binary(max_size=30))
def test_budget_files(pairs, table, noise):
    text = ("[budget]\n" if table else "") + "".join(f"{k} = {v}\n" for k, v in pairs)
    path = _file(text.encode() + (noise if len(pairs) % 3 == 0 else b""), ".toml")
    try:
        budget = load_budget(path)
        assert budget.limits
    except BudgetError:
        pass
    finally:
        path.unlink()


@pytest.fixture(scope="module")
def a_store(tmp_path_factory):
    """A real store holding one run, to damage."""
    import subprocess
    import sys

    path = tmp_path_factory.mktemp("store") / "runs.sqlite"
    subprocess.run([sys.executable, "-m", "gputriage", "run", "--store", str(path), "--quiet", "--", sys.executable,
                    "-c", "import time; time.sleep(1.2)"], check=True, timeout=120)
    return path.read_bytes()


@FUZZ
@given(column=st.sampled_from(["command", "meta", "verdict", "findings", "report", "data"]),
       value=st.one_of(st.text(max_size=40), st.binary(max_size=40), json_values.map(json.dumps)))
def test_store_rows_damaged(a_store, column, value):
    path = _file(a_store, ".sqlite")
    db = sqlite3.connect(path)
    table = "samples" if column == "data" else "runs"
    db.execute(f"UPDATE {table} SET {column} = ?", (value,))
    db.commit()
    db.close()
    try:
        for row in api.runs(path):
            assert isinstance(row["command"], list)
        assert api.show(1, path).schema == "gputriage.run"
    except GputriageError:
        pass
    finally:
        path.unlink()


@FUZZ
@given(mutations(b"SQLite format 3\x00" + bytes(200)))
def test_store_file_bytes(data):
    path = _file(data, ".sqlite")
    try:
        api.runs(path)
    except GputriageError:
        pass
    finally:
        path.unlink()
