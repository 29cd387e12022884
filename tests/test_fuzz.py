"""Generated malformed input for every reader (snapshot, trace, budget, store, what a server answers the load
client): each answers with its own one-line error or a (partial) analysis — never another exception, which the
command would turn into exit 4 — within a time bound."""

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
from gputriage.api.load import load
from gputriage.diagnosis.budget import KEYS, BudgetError, load_budget
from gputriage.model.snapshot import Snapshot, SnapshotError
from serving import HostileServer, http_answer

TRACES = Path(__file__).parent / "fixtures" / "h200" / "traces"
SMALL_TRACE = gzip.decompress((TRACES / "item_sync.json.gz").read_bytes())
SNAPSHOT = H200_SNAPSHOT.read_bytes()
FUZZ = settings(
    max_examples=60, deadline=3000, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


def mutations(original: bytes) -> st.SearchStrategy[bytes]:
    """The file cut anywhere, a stretch overwritten with other bytes, or bytes inserted."""
    n = len(original)
    cut = st.integers(0, n).map(lambda k: original[:k])
    overwrite = st.tuples(st.integers(0, n - 1), st.binary(min_size=1, max_size=64)).map(
        lambda t: original[: t[0]] + t[1] + original[t[0] + len(t[1]) :]
    )
    insert = st.tuples(st.integers(0, n), st.binary(min_size=1, max_size=64)).map(
        lambda t: original[: t[0]] + t[1] + original[t[0] :]
    )
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
@given(
    st.fixed_dictionaries(
        {"schema": st.just("gputriage.snapshot"), "version": st.just(1)},
        optional={"facts": json_values, "taken_at": json_values, "raw": json_values, "hostname": json_values},
    )
)
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


toml_values = st.one_of(
    st.integers(-(10**6), 10**6).map(str),
    st.floats(allow_nan=True).map(repr),
    st.booleans().map(lambda b: "true" if b else "false"),
    st.text(max_size=10).map(json.dumps),
    st.just("[1, 2]"),
    st.just("{a = 1}"),
    st.just("nan"),
    st.just("inf"),
    st.just("-inf"),
)


@FUZZ
@given(
    st.lists(st.tuples(st.sampled_from([*KEYS, "severity", "bogus"]), toml_values), max_size=6),
    st.booleans(),
    st.binary(max_size=30),
)
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
    subprocess.run(
        [
            sys.executable,
            "-m",
            "gputriage",
            "run",
            "--store",
            str(path),
            "--quiet",
            "--",
            sys.executable,
            "-c",
            "import time; time.sleep(1.2)",
        ],
        check=True,
        timeout=120,
    )
    return path.read_bytes()


@FUZZ
@given(
    column=st.sampled_from(["command", "meta", "verdict", "findings", "report", "data"]),
    value=st.one_of(st.text(max_size=40), st.binary(max_size=40), json_values.map(json.dumps)),
)
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


# The load client's responses: whatever a server answers (not HTTP, events that are JSON arrays or numbers, a
# stream cut anywhere, a stall), `load` ends with a report whose requests carry the error, or one line.

sse_events = st.one_of(
    json_values.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({"choices": json_values, "usage": json_values}).map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=40),
    st.just(b"[DONE]"),
)


def _sse(events: list[bytes], cut: int | None) -> bytes:
    body = b"".join(b"data: " + e + b"\n\n" for e in events)
    return body[:cut] if cut is not None else body


http_answers = st.one_of(
    st.binary(max_size=200),  # not HTTP at all
    st.tuples(
        st.sampled_from(
            ["200 OK", "500 Internal Server Error", "429 Too Many Requests", "204 No Content", "302 Found", "999 Weird"]
        ),
        st.lists(sse_events, max_size=6),
        st.none() | st.integers(0, 300),
        st.booleans(),
    )
    .map(lambda t: (t[0], _sse(t[1], t[2]), t[3]))
    .map(lambda t: http_answer(t[1], status=t[0], length=t[2])),
)


def _load_against(answer: bytes, model: str | None):
    with HostileServer(answer) as srv:
        return load(
            srv.url,
            concurrency=[2],
            requests_per_step=3,
            warmup=1,
            seconds_per_step=10,
            timeout_s=3,
            model=model,
            sample_gpus=False,
            store=False,
        )


@FUZZ
@given(http_answers, st.sampled_from([None, "m"]))
def test_load_client_against_hostile_answers(answer, model):
    pytest.importorskip("aiohttp")
    try:
        report = _load_against(answer, model)
    except GputriageError as exc:
        assert model is None and "/v1/models" in str(exc)  # only the model lookup may refuse the server
        return
    (step,) = report.steps
    assert step.requests == 3 and step.ok + sum(step.errors.values()) == 3


@pytest.mark.parametrize(
    "answer, error",
    [
        (b"SSH-2.0-OpenSSH_9.6\r\n", "stream"),  # not HTTP
        (bytes(range(256)), "stream"),
        (http_answer(b'data: [1, "two", {"choices": []}]\n\ndata: [DONE]\n\n'), "stream"),  # events that are arrays
        (http_answer(b'data: {"choices": [{"text": "a"}]}\n\ndata: {"choices": [{"te'), "stream"),  # half closed
        (http_answer(b'data: {"error": "out of blocks"}\n\n'), "server_error"),  # the server's own error event
    ],
    ids=["ssh", "binary", "json-arrays", "half-closed", "error-event"],
)
def test_load_names_what_a_hostile_server_answered(answer, error):
    pytest.importorskip("aiohttp")
    (step,) = _load_against(answer, "m").steps
    assert step.ok == 0 and step.errors == {error: 3}


def test_load_against_a_server_that_stalls_ends_with_timeouts():
    """A server that accepts and never answers: every request ends at its timeout (1 s here), and the model
    lookup says it could not read the model, within its bound."""
    pytest.importorskip("aiohttp")
    with HostileServer(stall=True) as srv:
        report = load(
            srv.url,
            concurrency=[2],
            requests_per_step=2,
            warmup=0,
            seconds_per_step=10,
            timeout_s=1,
            model="m",
            sample_gpus=False,
            store=False,
            metrics=False,
        )
        assert report.steps[0].errors == {"timeout": 2}
        assert "load.errors" in {f.id for f in report.findings}
        with pytest.raises(GputriageError, match="cannot read the served model"):
            load(srv.url, concurrency=[1], requests_per_step=1, warmup=0, timeout_s=1, sample_gpus=False, store=False)


# --- typed snapshot facts -----------------------------------------------------------------------------
def _declared_names() -> list[str]:
    from gputriage.model.fact_types import GPU, HOST

    return sorted(HOST) + [f"gpu.0.{name}" for name in sorted(GPU)]


HOSTILE_TEXT = st.text(alphabet=st.sampled_from(list("ab ·\x1b[31m\x07\x00\r\n\x9b\u202e\u2066\x7f")), max_size=30)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | HOSTILE_TEXT
    | st.floats(allow_nan=False, allow_infinity=False)
)
fact_values = st.one_of(  # often of a fact's own type (text, a count, a share), else anything JSON holds
    HOSTILE_TEXT,
    st.integers(0, 4096),
    st.floats(0, 100),
    st.lists(st.integers(0, 64) | HOSTILE_TEXT, max_size=4),
    st.recursive(
        json_scalars,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(["pid", "code", "blame", "count", "lines", "rx_errors", "name", "x"]) | HOSTILE_TEXT,
                inner,
                max_size=5,
            )
        ),
        max_leaves=20,
    ),
)
PRINTABLE = __import__("re").compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@FUZZ
@given(st.dictionaries(st.sampled_from(_declared_names()), fact_values, min_size=1, max_size=3), HOSTILE_TEXT)
def test_snapshot_facts_of_any_type(changes, hostname):
    """Any value under any declared fact's name: the check is made and drawn (terminal, Markdown, HTML) without
    a control character in what is printed, or the file is refused with GputriageError, naming the fact."""
    import io

    from gputriage.report import terminal
    from gputriage.report.check_markdown import render as render_markdown
    from gputriage.report.check_terminal import render as render_terminal
    from gputriage.report.html import render_html

    data = json.loads(SNAPSHOT)
    data["facts"] = [f for f in data["facts"] if f["name"] not in changes]
    data["facts"] += [{"name": name, "source": "fuzz", "value": value} for name, value in changes.items()]
    data["hostname"] = hostname
    path = _file(json.dumps(data).encode(), ".json")
    try:
        report = api.check(path)
    except GputriageError as exc:
        assert "fact " in str(exc) and any(name in str(exc) for name in changes)
        return
    finally:
        path.unlink()
    buf = io.StringIO()
    render_terminal(report, terminal.console(file=buf, width=80, color_system=None), verbose=True)
    for text in (buf.getvalue(), render_markdown(report), render_html(report)):
        assert PRINTABLE.search(text.replace("\t", " ")) is None
