"""`gputriage run`: exit codes, signals, stdio pass-through, the store (also after kill -9), budgets.

No workload here runs for a set time to be sampled: each waits for what the test looks at (its samples in the store,
a signal, a kill), so a loaded machine makes a test slower, never wrong."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import psutil
import pytest

from gputriage.diagnosis.budget import BudgetError, load_budget
from gputriage.sampling.store import Store

GT = [sys.executable, "-m", "gputriage"]


# a workload that runs until the store holds this many samples of it (`sys.argv[1]`: the store, run with no other)
UNTIL_SAMPLED = (
    "import sqlite3, sys, time\n"
    "db, t = sqlite3.connect(sys.argv[1], timeout=30), time.monotonic()\n"
    "while db.execute('SELECT COUNT(*) FROM samples').fetchone()[0] < {n} and time.monotonic() - t < 120:\n"
    "    {work}\n"
)


def until_sampled(n: int, work: str = "time.sleep(0.05)") -> str:
    return UNTIL_SAMPLED.format(n=n, work=work)


def gone(pids: list[int]) -> bool:
    """None of these processes runs any more (a zombie has ended)."""
    return not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie" for pid in pids)


def gt(*args: str, store, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        GT + list(args[:1]) + ["--store", str(store)] + list(args[1:]),
        capture_output=True,
        text=True,
        timeout=300,
        **kw,
    )


def test_exit_code_and_stdout_pass_through(tmp_path):
    store = tmp_path / "runs.sqlite"
    r = gt(
        "run",
        "--",
        sys.executable,
        "-c",
        "import sys; print('out'); print('err', file=sys.stderr); sys.exit(7)",
        store=store,
    )
    assert r.returncode == 7
    assert r.stdout == "out\n"
    assert r.stderr.startswith("err\n")
    r = gt("run", "--", sys.executable, "-c", "import sys; print(sys.stdin.read().upper())", store=store, input="hello")
    assert r.stdout.strip() == "HELLO" and r.returncode == 0


def test_signal_death_uses_the_shell_convention(tmp_path):
    r = gt(
        "run",
        "--",
        sys.executable,
        "-c",
        "import os, signal; os.kill(os.getpid(), signal.SIGTERM)",
        store=tmp_path / "s.sqlite",
    )
    assert r.returncode == 128 + signal.SIGTERM


def test_sigint_to_gputriage_reaches_the_workload_and_the_run_is_kept(tmp_path):
    store = tmp_path / "s.sqlite"
    ready = tmp_path / "ready"
    code = (  # waits for the signal, inside the try from the moment it says it is ready
        f"import pathlib, time\ntry:\n    pathlib.Path({str(ready)!r}).touch()\n    time.sleep(60)\n"
        "except KeyboardInterrupt:\n    print('child got SIGINT')\n    raise SystemExit(5)"
    )
    p = subprocess.Popen(
        GT + ["run", "--store", str(store), "--", sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120  # until the workload runs its loop (a loaded machine starts slower)
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)  # gputriage forwards it (or keeps it until the workload has started)
    out, _ = p.communicate(timeout=120)
    assert "child got SIGINT" in out and p.returncode == 5
    runs = json.loads(
        subprocess.run(GT + ["runs", "--store", str(store), "--json"], capture_output=True, text=True).stdout
    )["runs"]
    assert runs[0]["exit_code"] == 5 and runs[0]["complete"]


def test_command_not_found(tmp_path):
    r = gt("run", "--", "no-such-command-xyz", store=tmp_path / "s.sqlite")
    assert r.returncode == 127 and "not found" in r.stderr


def test_runs_and_show_json(tmp_path):
    store = tmp_path / "s.sqlite"
    code = until_sampled(5)
    gt("run", "--", sys.executable, "-c", code, str(store), store=store)
    runs = json.loads(gt("runs", "--json", store=store).stdout)["runs"]
    assert len(runs) == 1 and runs[0]["samples"] >= 5 and runs[0]["exit_code"] == 0
    shown = json.loads(gt("show", str(runs[0]["id"]), "--json", store=store).stdout)
    assert shown["command"][-2:] == [code, str(store)]
    assert gt("show", "999", store=store).returncode == 3


def test_the_workloads_reads_and_busiest_thread_are_sampled(tmp_path):
    data = tmp_path / "data.bin"
    data.write_bytes(os.urandom(8 * 2**20))
    store = tmp_path / "s.sqlite"
    reader = until_sampled(10, f"open({str(data)!r}, 'rb').read()")
    assert gt("run", "--", sys.executable, "-c", reader, str(store), store=store).returncode == 0
    samples = list(Store(store).samples(1))
    procs = [s.workload for s in samples if s.workload is not None and s.workload.rchar_bytes_per_s is not None]
    # 8 MiB files read back to back from the page cache: above the 20 MB/s that says a loop loads its input (with a
    # fraction of a core, still hundreds of MB/s), though no byte is read from disk
    assert max(p.rchar_bytes_per_s for p in procs) > 20e6
    # one busy thread does the work, more of it than every other thread together (what share of a core it gets
    # depends on what else runs; not asked: on a loaded machine the stack sampler's thread beside it, a fixed 1-2% of
    # a core, is a good part of the little the process gets)
    busiest = max(procs, key=lambda p: p.cpu_pct or 0)
    assert busiest.top_thread_pct is not None and busiest.cpu_pct is not None
    assert busiest.top_thread_pct > 0 and busiest.top_thread_pct > 0.5 * busiest.cpu_pct


def test_kill_9_of_gputriage_keeps_earlier_runs_and_most_samples(tmp_path):
    store = tmp_path / "s.sqlite"
    gt("run", "--", sys.executable, "-c", until_sampled(5), str(store), store=store)
    p = subprocess.Popen(  # a workload that waits to be killed
        GT + ["run", "--store", str(store), "--", sys.executable, "-c", "import time; time.sleep(120)"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120  # until 1.5 s of samples are written (a loaded machine starts slower)
    while time.monotonic() < deadline:
        try:
            written = sqlite3.connect(store).execute("SELECT COUNT(*) FROM samples WHERE run_id = 2").fetchone()[0]
        except sqlite3.Error:
            written = 0
        if written >= 15:
            break
        time.sleep(0.2)
    workload = [c.pid for c in psutil.Process(p.pid).children()]
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    deadline = time.monotonic() + 30  # the workload gets SIGTERM when its parent dies: until it has ended
    while not gone(workload) and time.monotonic() < deadline:
        time.sleep(0.05)
    # the workload died with gputriage: no orphan runs on
    assert workload and gone(workload)
    s = Store(store)
    listed = s.runs()
    assert len(listed) == 2
    assert listed[1]["complete"] and listed[1]["samples"] >= 5  # the earlier run is intact
    killed = listed[0]
    assert not killed["complete"]
    # with 1 s batches, at most the last second is lost: what was written before the kill stays
    assert killed["samples"] >= 15
    assert sqlite3.connect(store).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    shown = subprocess.run(GT + ["show", str(killed["id"]), "--store", str(store)], capture_output=True, text=True)
    assert shown.returncode == 0 and "incomplete" in shown.stdout


def test_a_store_that_is_not_a_database_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_text("this is not sqlite" * 100)
    r = gt("runs", store=bad)
    assert r.returncode == 3 and "cannot open the run store" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "text, message",
    [
        ("[budget]\nmax_temperature_c = 'hot'\n", "must be a number"),
        ("[budget]\nmax_temp = 80\n", "unknown budget"),
        ("[budget\nmax_temperature_c = 80\n", "not valid TOML"),
        ("[budget]\nno_swap = 1\n", "true or false"),
        ("[budget]\n", "no budget"),
    ],
)
def test_bad_budget_files(tmp_path, text, message):
    path = tmp_path / "budget.toml"
    path.write_text(text)
    with pytest.raises(BudgetError, match=message):
        load_budget(path)
    r = subprocess.run(
        GT + ["check", "--from", "tests/fixtures/h200/snapshot_idle.json", "--budget", str(path)],
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.dirname(__file__)),
    )
    assert r.returncode == 3 and len(r.stderr.strip().splitlines()) == 1


def test_budget_violations_are_findings_and_fail_on(tmp_path):
    path = tmp_path / "budget.toml"
    path.write_text(
        "[budget]\nvram_headroom_pct = 99.9\nmax_temperature_c = 20\nmin_pcie_width = 16\nseverity = 'critical'\n"
    )
    root = os.path.dirname(os.path.dirname(__file__))
    r = subprocess.run(
        GT + ["check", "--from", "tests/fixtures/h200/snapshot_idle.json", "--budget", str(path), "--json"],
        capture_output=True,
        text=True,
        cwd=root,
    )
    ids = {f["id"] for f in json.loads(r.stdout)["findings"]}
    assert {"budget.vram_headroom_pct", "budget.max_temperature_c"} <= ids
    assert "budget.min_pcie_width" not in ids  # the recorded link is x16
    assert r.returncode == 1


def test_watch_runs_for_a_while_and_leaves_with_a_summary(tmp_path):
    r = subprocess.run(
        GT + ["watch", "--seconds", "1.5", "--store", str(tmp_path / "w.sqlite")],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stderr
    assert "gputriage watch" in r.stdout and "Traceback" not in r.stderr
    runs = json.loads(
        subprocess.run(
            GT + ["runs", "--store", str(tmp_path / "w.sqlite"), "--json"], capture_output=True, text=True
        ).stdout
    )["runs"]
    assert runs[0]["kind"] == "watch" and runs[0]["samples"] >= 1  # how many in 1.5 s: as the machine allows


def test_a_busy_thread_beside_an_idle_main_thread_is_told_from_the_main_thread():
    # the main thread waits while a second thread spins: the busiest thread is not the main one
    from gputriage.backends.process_tree import ProcessDetail, details_of, rates

    spin = (
        "import threading, time\n"
        "def spin():\n    while True: pass\n"
        "threading.Thread(target=spin, daemon=True).start()\ntime.sleep(30)"
    )
    p = subprocess.Popen([sys.executable, "-c", spin])
    try:
        deadline = time.monotonic() + 60
        first = details_of([p.pid])
        while len(first.get(p.pid, ProcessDetail({}, 0, 0, 0, 0, 0)).threads_cpu_s) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)  # until the spinning thread has started
            first = details_of([p.pid])
        t0 = time.monotonic()
        while time.monotonic() < deadline:  # until the spinner has used 0.3 s of CPU, however loaded the machine
            second = details_of([p.pid])
            if second[p.pid].cpu_s - first[p.pid].cpu_s >= 0.3:
                break
            time.sleep(0.02)
        r = rates(first, second, time.monotonic() - t0)
    finally:
        p.kill()
        p.wait()
    assert r.processes == 1 and r.top_thread_pct >= 0.8 * r.cpu_pct > 0  # the spinning thread is the busiest
    assert r.main_thread_pct < r.top_thread_pct / 10  # the main thread sleeps (interpreter start-up aside)
