"""A store that cannot be written: said before the long work, in one line (exit 3), and a result measured
before a write failed is still printed, never lost."""

from __future__ import annotations

import importlib
import os
import sqlite3
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gputriage import api
from gputriage.api._common import GputriageError, check_store, keep_report
from gputriage.cli.main import app
from gputriage.model.load import LoadReport
from gputriage.sampling import store as store_module
from gputriage.sampling.store import Store

RUNNER = CliRunner()


@pytest.fixture
def read_only_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store holding one finished run, its file made read-only (root writes through file modes, so for root
    SQLite is also made to open that file read-only, as it does for anyone else)."""
    path = tmp_path / "runs.sqlite"
    report = api.run([sys.executable, "-c", "pass"], store=path, period_s=0.1)
    assert report.id == 1
    path.chmod(0o444)
    if os.geteuid() == 0:
        connect = sqlite3.connect

        def read_only(database: str, *args: object, **kwargs: object) -> sqlite3.Connection:
            if str(database) == str(path):
                return connect(f"file:{path}?mode=ro", *args, uri=True, **kwargs)  # type: ignore[arg-type]
            return connect(database, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(store_module.sqlite3, "connect", read_only)
    yield path
    path.chmod(0o644)


def one_line(result, code: int = 3) -> str:
    assert result.exit_code == code, (result.exit_code, result.output)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.stderr
    return lines[0]


def test_bench_refuses_a_read_only_store_before_its_probes(read_only_store, monkeypatch):
    bench_module = importlib.import_module("gputriage.api.bench")  # the module (the package exports the function)
    ran = []
    monkeypatch.setattr(bench_module, "_measure", lambda *a: ran.append(a))  # the probes: never reached
    line = one_line(RUNNER.invoke(app, ["bench", "--quick", "--no-gpu", "--no-disk", "--store", str(read_only_store)]))
    assert "cannot write the run store" in line and not ran


def test_bench_prints_its_results_when_the_store_fails_after_the_probes(tmp_path, monkeypatch):
    """The store took the check but fails to keep the bench (a disk that filled meanwhile): the results are
    printed, the failure is the one line on stderr, exit 3."""

    def full(self, machine, results):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(Store, "add_bench", full)
    r = RUNNER.invoke(app, ["bench", "--quick", "--no-gpu", "--no-disk", "--store", str(tmp_path / "s.sqlite")])
    assert "host.memcpy" in r.stdout  # measured, and shown
    assert "database or disk is full" in one_line(r)
    report = api.bench(quick=True, gpu=False, disk=False, store=tmp_path / "s.sqlite")
    assert [r.name for r in report.results] == ["host.memcpy"] and report.errors[-1].probe == "store"


def test_baseline_save_and_run_refuse_a_read_only_store_in_one_line(read_only_store, tmp_path):
    assert "cannot write the run store" in one_line(
        RUNNER.invoke(app, ["baseline", "save", "good", "1", "--store", str(read_only_store)])
    )
    marker = tmp_path / "ran"
    r = RUNNER.invoke(
        app, ["run", "--store", str(read_only_store), "--", sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    )
    assert "--no-store" in one_line(r) and not marker.exists()  # refused before the workload started
    # reading it still works
    assert RUNNER.invoke(app, ["runs", "--store", str(read_only_store)]).exit_code == 0


def test_a_load_test_checks_the_store_first_and_keeps_its_report_if_the_store_fails_later(
    read_only_store, tmp_path, monkeypatch
):
    with pytest.raises(GputriageError, match="cannot write the run store"):
        check_store(read_only_store)
    report = LoadReport()
    keep_report(report, "load", ["http://x"], read_only_store)  # failing after the sweep: a note, not an error
    assert report.id is None and any("not kept" in n for n in report.notes)

    def full(self, kind, command, report):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(Store, "add_report", full)
    report = LoadReport()
    keep_report(report, "load", ["http://x"], tmp_path / "fresh.sqlite")
    assert report.id is None and any("database or disk is full" in n for n in report.notes)


def test_a_store_another_process_has_just_created_reads_as_empty(tmp_path):
    """`sqlite3.connect` makes the file before the run's tables exist: a reader in between (`gputriage runs`,
    `profile`, `show`) finds no run rather than an error."""
    path = tmp_path / "runs.sqlite"
    sqlite3.connect(str(path)).close()  # the file, no table yet
    store = Store(path, readonly=True)
    try:
        assert store.runs() == [] and store.run(1) is None and list(store.samples(1)) == []
        assert store.last_bench() is None and store.baseline("x") is None and not store.has_baselines()
    finally:
        store.close()
