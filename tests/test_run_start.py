"""How `run` takes its command: a list, or one command line split as a shell splits it; a command that cannot
start fails in one line with the shell's exit code and leaves nothing in the store; `runs` on a machine that
never ran anything says so."""

from __future__ import annotations

import json
import shlex
import sys

import pytest
from typer.testing import CliRunner

from gputriage import api
from gputriage.api._common import UsageError
from gputriage.api.run import command_line
from gputriage.cli.main import app
from gputriage.sampling.store import Store

RUNNER = CliRunner()


@pytest.mark.parametrize(
    "given, argv",
    [
        ("python train.py --lr 3e-4", ["python", "train.py", "--lr", "3e-4"]),
        ("python -c 'print(1)'", ["python", "-c", "print(1)"]),
        (["true"], ["true"]),
        (("python", "x.py"), ["python", "x.py"]),
    ],
)
def test_a_command_is_a_list_or_one_command_line(given, argv):
    assert command_line(given) == argv


@pytest.mark.parametrize("given", [[], "", "   ", "python 'unclosed", ["python", 3], [None], b"true"])
def test_an_empty_or_malformed_command_is_a_usage_error(given):
    with pytest.raises(UsageError):
        command_line(given)


def test_run_of_one_string_runs_that_command_line(tmp_path):
    marker = tmp_path / "ran"
    argv = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    report = api.run(shlex.join(argv), store=False)  # "python -c 'open(...)'" as one line
    assert report.exit_code == 0 and marker.exists() and report.command == argv
    with pytest.raises(api.GputriageError, match="no command to run"):
        api.run([], store=False)


@pytest.mark.parametrize(
    "command, code, says",
    [
        (["nosuchcmd-gputriage"], 127, "command not found"),
        ("DIR", 126, "is a directory"),
        ("./DIR", 126, "is a directory"),
    ],
)
def test_a_command_that_cannot_start_leaves_no_run_in_the_store(tmp_path, command, code, says, monkeypatch):
    (tmp_path / "DIR").mkdir()
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "runs.sqlite"
    argv = [str(tmp_path / "DIR")] if command == "DIR" else command if isinstance(command, list) else [command]
    r = RUNNER.invoke(app, ["run", "--store", str(store), "--", *argv])
    assert r.exit_code == code and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.output
    db = Store(store, readonly=True)
    try:
        assert db.runs() == []  # no phantom "cut" run
    finally:
        db.close()
    assert RUNNER.invoke(app, ["run", "--store", str(store), "--", sys.executable, "-c", "pass"]).exit_code == 0
    listed = RUNNER.invoke(app, ["runs", "--store", str(store), "--json"])
    assert [run["complete"] for run in json.loads(listed.stdout)["runs"]] == [True]


def test_runs_before_any_run_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUTRIAGE_STORE", str(tmp_path / "never" / "runs.sqlite"))
    r = RUNNER.invoke(app, ["runs"])
    assert r.exit_code == 0 and "no runs yet" in r.stdout
    r = RUNNER.invoke(app, ["runs", "--json"])
    assert r.exit_code == 0 and '"runs": []' in r.stdout
    assert api.runs() == []
    assert not (tmp_path / "never").exists()  # listing created nothing
    r = RUNNER.invoke(app, ["runs", "--store", str(tmp_path / "typo.sqlite")])  # a store named, and not there
    assert r.exit_code == 3 and "no such run store" in r.stderr


def test_a_signal_while_the_workload_starts_reaches_it(monkeypatch):
    # a scheduler's SIGTERM arriving between the workload's start and gputriage's handlers (a loaded machine: seen
    # as a SIGINT that ended gputriage and, with it, the workload unwarned): kept and forwarded once it exists
    import os
    import signal
    import subprocess

    from gputriage.backends import workload as wl

    real = subprocess.Popen

    def popen_then_signal(*args, **kwargs):
        proc = real(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)  # to gputriage, before it has the workload's handle
        return proc

    monkeypatch.setattr(wl.subprocess, "Popen", popen_then_signal)
    before = signal.getsignal(signal.SIGTERM)
    w = wl.Workload.start([sys.executable, "-c", "import time; time.sleep(30)"], dict(os.environ))
    assert isinstance(w, wl.Workload)
    assert w.wait() == 128 + signal.SIGTERM  # the workload got it; this process lives on
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_workload_that_cannot_start_gives_the_signals_back(monkeypatch):
    import os
    import signal

    from gputriage.backends import workload as wl

    before = signal.getsignal(signal.SIGINT)
    got = wl.Workload.start(["/no/such/command"], dict(os.environ))
    assert isinstance(got, wl.Unavailable) and signal.getsignal(signal.SIGINT) == before
