"""Never lose the workload, never crash on input: what a new user (or a scheduler, or a bad file)
does to gputriage, each with the test that would have caught it."""

from __future__ import annotations

import gzip
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import H200_SNAPSHOT

ROOT = Path(__file__).parent.parent
TRACES = Path(__file__).parent / "fixtures" / "h200" / "traces"
GT = [sys.executable, "-m", "gputriage"]


def gt(*args: str, **kw) -> subprocess.CompletedProcess:
    """The command, in a terminal 200 columns wide unless `env` says otherwise."""
    kw.setdefault("env", dict(os.environ, COLUMNS="200"))
    return subprocess.run(GT + list(args), capture_output=True, text=True, timeout=120, cwd=ROOT, **kw)


def one_line_error(r: subprocess.CompletedProcess, code: int = 3) -> None:
    assert r.returncode == code, (r.returncode, r.stderr[-500:])
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr


# --- the workload and its data -----------------------------------------------------------------
def test_a_store_that_cannot_take_the_run_stops_gputriage_before_the_workload(tmp_path):
    foreign = tmp_path / "other.sqlite"
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE runs (name TEXT, score REAL)")  # another program's `runs`
    db.commit()
    db.close()
    marker = tmp_path / "ran"
    r = gt("run", "--store", str(foreign), "--", sys.executable, "-c", f"open({str(marker)!r}, 'w')")
    one_line_error(r)
    assert "not a gputriage run store" in r.stderr and not marker.exists()
    # a store that cannot be created (its folder is a file): the same, and the way out is named
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = gt(
        "run",
        "--",
        sys.executable,
        "-c",
        f"open({str(marker)!r}, 'w')",
        env=dict(os.environ, GPUTRIAGE_STORE=str(blocker / "runs.sqlite")),
    )
    one_line_error(r)
    assert "--no-store" in r.stderr and not marker.exists()


def test_a_store_that_fails_during_the_run_leaves_the_report_whole(tmp_path, monkeypatch):
    from gputriage import api
    from gputriage.sampling.store import Store

    calls = []

    def failing(self, run_id, samples):
        calls.append(len(samples))
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(Store, "add_samples", failing)
    report = api.run(
        [sys.executable, "-c", "import time; time.sleep(2.5); raise SystemExit(3)"],
        store=tmp_path / "s.sqlite",
        period_s=0.1,
    )
    assert calls and report.exit_code == 3 and report.samples >= 15  # sampling went on in memory
    assert any("stopped taking samples" in n for n in report.notes)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT])
def test_a_signal_sent_to_gputriage_alone_reaches_the_workload(tmp_path, signum):
    ready = tmp_path / "ready"
    code = (
        "import pathlib, signal, sys, time\n"
        "for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):\n"
        "    signal.signal(s, lambda n, f: (print('got', n, flush=True), sys.exit(5)))\n"
        f"pathlib.Path({str(ready)!r}).touch()\n"
        "time.sleep(30)\n"
    )
    # its own session: no terminal, as under a scheduler or `timeout -s INT`
    p = subprocess.Popen(
        GT + ["run", "--store", str(tmp_path / "s.sqlite"), "--", sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 20  # a loaded CI machine may take seconds to start both processes
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ready.exists(), "the workload never started"
    time.sleep(0.3)  # gputriage installs its forwarding before it waits on the workload
    t0 = time.monotonic()
    p.send_signal(signum)
    out, _ = p.communicate(timeout=30)
    assert f"got {int(signum)}" in out and p.returncode == 5 and time.monotonic() - t0 < 5


def test_a_foreign_sqlite_file_is_refused_and_an_older_store_is_migrated(tmp_path):
    foreign = tmp_path / "app.sqlite"
    sqlite3.connect(foreign).execute("CREATE TABLE users (id INTEGER)").connection.commit()
    for args in (("runs",), ("show", "1")):
        r = gt(*args, "--store", str(foreign))
        one_line_error(r)
        assert "not a gputriage run store" in r.stderr
    assert sqlite3.connect(foreign).execute("SELECT name FROM sqlite_master").fetchall() == [("users",)]  # untouched
    # a store written before runs kept their report (the first schema, untyped samples)
    old = tmp_path / "old.sqlite"
    db = sqlite3.connect(old)
    db.executescript("""CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL,
        command TEXT NOT NULL, started REAL NOT NULL, ended REAL, exit_code INTEGER, meta TEXT NOT NULL,
        verdict TEXT, findings TEXT);
        CREATE TABLE samples (run_id INTEGER NOT NULL, t REAL NOT NULL, data TEXT NOT NULL);
        CREATE TABLE benches (id INTEGER PRIMARY KEY AUTOINCREMENT, started REAL NOT NULL, machine TEXT NOT NULL,
        results TEXT NOT NULL);""")
    scenarios = Path(__file__).parent / "fixtures/h200/scenario_samples.json"
    rows = json.loads(scenarios.read_text())["small_batch"]["samples"]
    db.execute(
        "INSERT INTO runs(kind, command, started, ended, exit_code, meta) VALUES ('run', ?, ?, ?, 0, ?)",
        (
            json.dumps(["python", "train.py"]),
            rows[0]["t"],
            rows[-1]["t"],
            json.dumps({"gpus": {"0": {"memory_total_bytes": 150754820096}}}),
        ),
    )
    db.executemany(
        "INSERT INTO samples VALUES (1, ?, ?)",
        [
            (
                r["t"],
                json.dumps(
                    {
                        "t": r["t"],
                        "gpus": [{"index": 0, **{k: r[k] for k in ("util", "used", "power", "gpm") if k in r}}],
                    }
                ),
            )
            for r in rows
        ],
    )
    db.commit()
    db.close()
    shown = gt("show", "1", "--store", str(old), "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["verdict"]["bottleneck"] == "underfilled"
    assert sqlite3.connect(old).execute("PRAGMA user_version").fetchone()[0] == 0  # reading changed nothing
    assert gt("run", "--store", str(old), "--", sys.executable, "-c", "pass").returncode == 0
    migrated = sqlite3.connect(old)
    assert migrated.execute("PRAGMA user_version").fetchone()[0] == 3  # with the baselines table
    assert migrated.execute("SELECT COUNT(*) FROM baselines").fetchone()[0] == 0
    assert len(migrated.execute("SELECT id FROM runs").fetchall()) == 2


def test_reading_commands_open_the_store_read_only(tmp_path):
    store = tmp_path / "s.sqlite"
    assert gt("run", "--store", str(store), "--", sys.executable, "-c", "pass").returncode == 0
    before = store.read_bytes()
    store.chmod(0o444)
    try:
        assert gt("runs", "--store", str(store)).returncode == 0
        assert gt("show", "1", "--store", str(store), "--json").returncode == 0
    finally:
        store.chmod(0o644)
    assert store.read_bytes() == before


# --- input --------------------------------------------------------------------------------------
def test_an_oversized_snapshot_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(65 << 20)  # sparse: the size alone refuses it
    t0 = time.monotonic()
    r = gt("check", "--from", str(big))
    one_line_error(r)
    assert "larger than a snapshot can be" in r.stderr and time.monotonic() - t0 < 10


def test_a_long_string_in_a_snapshot_is_cut_in_the_terminal(tmp_path):
    data = json.loads(H200_SNAPSHOT.read_text())
    for f in data["facts"]:
        if f["name"] == "gpu.0.name":
            f["value"] = "H" * 1_000_000
    path = tmp_path / "long.json"
    path.write_text(json.dumps(data))
    r = gt("check", "--from", str(path), "--fail-on", "never")
    assert r.returncode == 0 and len(r.stdout) < 20_000


@pytest.mark.parametrize(
    "content",
    [
        b'{"schema": "gputriage.snapshot", "version": 1, "facts": 7}',
        b'{"schema": "gputriage.snapshot", "version": 1, "facts": [{"value": 1}]}',
        b'{"schema": "gputriage.snapshot", "version": 1, "facts": [{"name": "x", "unavailable": {"reason": "why"}}]}',
        b'{"schema": "gputriage.snapshot", "version": 1, "facts": [], "taken_at": "noon"}',
        b'{"schema": "gputriage.snapshot", "version": 1, "facts": [{"name": "x", "value": '
        + b"[" * 100000
        + b"]" * 100000
        + b"}]}",
        b'{"schema": "gputriage.snapshot", "version": "1", "facts": []}',
        b'\xff\xfe{"schema"',
    ],
)
def test_a_malformed_snapshot_is_a_one_line_error(tmp_path, content):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    one_line_error(gt("check", "--from", str(path)))


def test_a_corrupt_or_cut_gzip_trace_and_one_bad_file_among_several(tmp_path):
    raw = gzip.decompress((TRACES / "launch_bound.json.gz").read_bytes())
    packed = gzip.compress(raw)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(packed[: int(len(packed) * 0.9)])
    r = gt("trace", str(cut), "--json")
    assert r.returncode == 0, r.stderr
    rank = json.loads(r.stdout)["ranks"][0]
    assert rank["verdict"]["bottleneck"] == "launch_bound" and any("cut or corrupt" in p for p in rank["problems"])
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(b"\x1f\x8b" + os.urandom(4000))
    one_line_error(gt("trace", str(broken)))
    r = gt("trace", str(TRACES / "healthy.json.gz"), str(broken))
    assert r.returncode == 3 and "not read:" in r.stdout and "broken.json.gz" in r.stdout
    assert "compute_bound" in r.stdout  # the readable file is analyzed


@pytest.mark.parametrize(
    "line",
    [
        "max_temperature_c = -5",
        "vram_headroom_pct = 150",
        "max_iowait_pct = nan",
        "min_sm_active_pct = inf",
        "min_pcie_width = 0",
    ],
)
def test_budget_values_outside_their_range_are_refused(tmp_path, line):
    from gputriage.diagnosis.budget import BudgetError, load_budget

    path = tmp_path / "b.toml"
    path.write_text(f"[budget]\n{line}\n")
    with pytest.raises(BudgetError, match="is outside"):
        load_budget(path)


@pytest.mark.parametrize(
    "value, hidden, sees",
    [
        ("garbage", True, None),
        ("3", True, None),
        ("GPU-ffffffff", True, None),
        ("0,7", False, ["0"]),
        ("0", None, None),
        ("GPU-", None, None),
    ],
)
def test_cuda_visible_devices_is_read_as_cuda_reads_it(value, hidden, sees):
    from gputriage.diagnosis.check import evaluate
    from gputriage.model.fact import Fact
    from gputriage.model.snapshot import Snapshot

    base = Snapshot.load(H200_SNAPSHOT)
    facts = tuple(f for f in base.facts if f.name != "env.CUDA_VISIBLE_DEVICES")
    snap = Snapshot(facts=facts + (Fact("env.CUDA_VISIBLE_DEVICES", value, "env"),), taken_at=0.0)
    found = {f.id: f for f in evaluate(snap)}
    assert ("env.gpus_hidden" in found) is bool(hidden)
    assert ("env.visible_devices_cut_short" in found) is (hidden is False)
    if sees is not None:
        assert found["env.visible_devices_cut_short"].evidence["cuda_sees"] == sees


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_terminal_that_cannot_take_utf8_gets_ascii(encoding):
    env = dict(os.environ, PYTHONIOENCODING=encoding)
    for args in (
        ("trace", str(TRACES / "item_sync.json.gz")),
        ("check", "--from", str(H200_SNAPSHOT), "--fail-on", "never"),
        ("rules",),
    ):
        r = subprocess.run(GT + list(args), capture_output=True, cwd=ROOT, env=env, timeout=60)
        assert r.returncode == 0, r.stderr[-300:]
        r.stdout.decode(encoding)


@pytest.mark.parametrize(
    "args",
    [
        ("watch", "--seconds", "0"),
        ("watch", "--seconds", "-1"),
        ("trace", str(TRACES / "healthy.json.gz"), "--top", "-5"),
        ("run", "--profile-steps", "-3", "--", "python", "x.py"),
        ("run", "--profile-skip", "-1", "--", "python", "x.py"),
        ("rules", "--command", "nope"),
    ],
)
def test_arguments_out_of_range_are_usage_errors(args):
    assert gt(*args).returncode == 2


def test_a_reader_that_stops_early_is_not_an_error():
    for args in (["rules"], ["rules", "--json"], ["trace", str(TRACES / "launch_bound.json.gz")]):
        p = subprocess.Popen(GT + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
        assert p.stdout is not None and p.stderr is not None
        p.stdout.read(200)
        p.stdout.close()
        assert p.wait(timeout=60) == 0 and b"Traceback" not in p.stderr.read()


def test_snapshot_to_stdout(tmp_path):
    r = gt("snapshot", "-o", "-", "--no-load", "--window", "0.1")
    assert r.returncode == 0 and json.loads(r.stdout)["schema"] == "gputriage.snapshot"
    assert not (ROOT / "-").exists()


# --- output users read --------------------------------------------------------------------------
def test_run_json_can_be_piped_while_the_workload_prints(tmp_path):
    r = gt("run", "--no-store", "--json", "--", sys.executable, "-c", "print('step 1: loss 2.3'); print('{')")
    assert r.returncode == 0
    assert json.loads(r.stdout)["schema"] == "gputriage.run"  # stdout holds the JSON alone
    assert "step 1: loss 2.3" in r.stderr  # the workload's output went to stderr


def test_tables_fit_80_columns(tmp_path):
    import io

    import msgspec
    from rich.console import Console

    from gputriage import api
    from gputriage.model.bench import BenchReport
    from gputriage.report.bench_terminal import render as render_bench
    from gputriage.report.check_terminal import render as render_check

    def text(draw) -> str:
        buf = io.StringIO()
        draw(Console(file=buf, width=80, color_system=None))
        return buf.getvalue()

    busy = text(lambda c: render_check(api.check(H200_SNAPSHOT.parent / "snapshot_busy.json"), c))
    assert "NVIDIA H200" in busy and "93.6%" in busy and "…" not in busy
    data = json.loads((H200_SNAPSHOT.parent / "bench_h200.json").read_text())
    bench = text(lambda c: render_bench(msgspec.convert(dict(data, version=2), BenchReport), c))
    assert "756.3 TFLOP/s" in bench and "4231.3 GB/s" in bench and "…" not in bench
    # `runs`: the id `show` needs survives two-digit ids and long commands
    from gputriage.model.run import RunMeta, RunReport
    from gputriage.sampling.store import Store

    store = tmp_path / "s.sqlite"
    db = Store(store)
    for _ in range(11):
        command = [sys.executable, "-c", "'" + "x" * 100 + "'"]
        run_id = db.begin_run("run", command, RunMeta())
        db.end_run(RunReport(id=run_id, command=command, exit_code=0))
    db.close()
    r = gt("runs", "--store", str(store), env=dict(os.environ, COLUMNS="80"))
    assert all(len(line) <= 80 for line in r.stdout.splitlines())
    assert [line.split()[0] for line in r.stdout.splitlines()[1:3]] == ["11", "10"]
    # `rules`: no id is broken across lines
    rules = gt("rules", env=dict(os.environ, COLUMNS="80")).stdout
    assert "env.visible_devices_cut_short" in rules and "trace.slow_gemms" in rules


def test_findings_read_as_sentences():
    from gputriage import api

    r = gt("trace", str(TRACES / "run_profile_item_sync.json.gz"), env=dict(os.environ, COLUMNS="80"))
    assert "None" not in r.stdout and "True" not in r.stdout and "1 host synchronizations" not in r.stdout
    report = api.analyze_trace([TRACES / "run_profile_item_sync.json.gz"])
    lead = report.findings[0]
    assert r.stdout.count(lead.decision[:40]) == 1  # the verdict's decision is printed once
    one = gt("trace", str(TRACES / "too_short_window.json.gz")).stdout
    assert "0 profiler steps" not in one


def test_help_reads_well_at_80_columns():
    env = dict(os.environ, COLUMNS="80")
    for command in ("check", "run", "trace", "watch", "bench", "rules", "show", "runs", "snapshot"):
        r = gt(command, "--help", env=env)
        assert r.returncode == 0 and "<bool>" not in r.stdout and "seed" not in r.stdout
        assert all(len(line) <= 80 for line in r.stdout.splitlines()), command


def test_without_a_gpu_run_shows_the_host_and_explains_a_kill():
    r = gt(
        "run",
        "--no-store",
        "--",
        sys.executable,
        "-c",
        "import os, signal, time\nt = time.time()\nwhile time.time() - t < 3: pass\n"
        "os.kill(os.getpid(), signal.SIGKILL)",
    )
    assert r.returncode == 137
    assert "killed by signal 9" in r.stderr and "host: workload CPU" in r.stderr
