"""py-spy for the processes gputriage did not start (`watch`): a recorded dump classified by the stack sampler's
own rules, a real py-spy on a real Python process where it is permitted, and plain words where it is not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from gputriage.backends import pyspy as backend
from gputriage.inworkload.stack_classify import Classifier
from gputriage.inworkload.stack_sampler import CATEGORIES, Counts
from gputriage.model.pyspy import PySpyStacks
from gputriage.model.reading import Unavailable
from gputriage.report.pyspy_terminal import render_pyspy
from gputriage.sampling.pyspy import PySpySampler, count_dump, started, summary

CPU = Path(__file__).parent / "fixtures" / "cpu"
WORKLOAD = CPU / "pyspy_workload.py"
RECORDED_AT = "/work/main/tests/fixtures/cpu/pyspy_workload.py"  # where the workload lay when its dump was recorded


def recorded_dump() -> tuple[list[dict], int]:
    """`py-spy dump --pid PID --json` of pyspy_workload.py (py-spy 0.4.3, Python 3.11), its script's path pointed at
    where the script lies now; and the process id it had."""
    text = (CPU / "pyspy_dump.json").read_text().replace(RECORDED_AT, str(WORKLOAD.resolve()))
    threads = json.loads(text)
    return threads, next(t["pid"] for t in threads)


def by_thread(threads: list[dict], pid: int) -> dict[str, tuple[str, tuple[str, int, str]]]:
    """Each thread's category and line, as the sampler of a `watch` counts them."""
    out = {}
    for t in threads:
        counts = Counts()
        count_dump([t], pid, counts, Classifier(), cuda=True)
        (row,) = counts.lines.items()
        (file, line, function, cat), _ = row
        out[t["thread_name"]] = (CATEGORIES[cat], (Path(file).name, line, function))
    return out


def test_a_recorded_dump_is_classified_by_the_stack_samplers_rules():
    threads, pid = recorded_dump()
    got = by_thread(threads, pid)
    # the main thread blocked in queue.get (threading's Condition.wait as py-spy names it), named at its own line
    assert got["MainThread"] == ("input_wait", ("pyspy_workload.py", 31, "<module>"))
    assert got["helper"] == ("host_compute", ("pyspy_workload.py", 16, "compute"))  # arithmetic in Python
    assert got["feeder"] == ("input_wait", ("pyspy_workload.py", 21, "feed"))  # time.sleep(5.0)
    counts = Counts()
    assert count_dump(threads, pid, counts, Classifier()) == 3
    s = summary(counts, dumps=1, every_s=10.0, pids=[pid], failed={})
    assert s.main_shares == {"input_wait": 1.0}
    assert [(x.line, x.main) for x in s.lines][0] == (31, True)


def test_a_dump_of_another_pythons_standard_library_is_read_as_the_standard_library():
    threads, pid = recorded_dump()
    main = next(t for t in threads if t["thread_name"] == "MainThread")
    for frame in main["frames"]:  # the same stack from a Python installed elsewhere
        frame["filename"] = (
            frame["filename"].replace(os.path.dirname(frame["filename"]), "/opt/conda/lib/python3.9")
            if frame["filename"].endswith(("threading.py", "queue.py"))
            else frame["filename"]
        )
    assert by_thread([main], pid)["MainThread"][0] == "input_wait"


def test_py_spy_reads_a_real_python_process_where_it_is_permitted(tmp_path):
    required = os.environ.get("GPUTRIAGE_REQUIRE_PYSPY") == "1"
    proc = subprocess.Popen([sys.executable, str(WORKLOAD), "120"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        got = backend.dump(proc.pid)
        if isinstance(got, Unavailable):
            assert got.reason in ("not_installed", "no_permission"), got
            assert got.detail.startswith(("py-spy is not installed", f"py-spy may not read process {proc.pid}"))
            if required:
                pytest.fail(f"GPUTRIAGE_REQUIRE_PYSPY=1: {got.detail}")
            pytest.skip(got.detail)
        names = {t.get("thread_name") for t in got}
        assert {"MainThread", "helper", "feeder"} <= names
        helper = next(t for t in got if t.get("thread_name") == "helper")
        assert by_thread([helper], proc.pid)["helper"][0] == "host_compute"
        # the main thread waits in the queue at its line 31, or (between two gets) runs line 30-31 of its loop
        main = by_thread([t for t in got if t.get("thread_name") == "MainThread"], proc.pid)["MainThread"]
        assert main[1][0] == "pyspy_workload.py" and main[1][1] in (29, 30, 31, 32, 33)
        assert backend.dump(2**22 + 12345).reason in ("not_found", "no_permission")
    finally:
        proc.kill()
        proc.wait()


def test_what_py_spy_cannot_do_is_said_plainly():
    denied = "Permission Denied: Try running again with elevated permissions by going 'sudo env \"PATH=$PATH\" !!'"
    why = backend.why_failed(4242, denied, scope=1, euid=1000)
    assert why.reason == "no_permission" and "ptrace_scope is 1" in why.detail and "CAP_SYS_PTRACE" in why.detail
    assert "only root" in backend.permission_hint(2, euid=1000)
    assert "--cap-add SYS_PTRACE" in backend.permission_hint(0, euid=0)
    assert backend.why_failed(1, "Error: Failed to find python version from target process").reason == "not_supported"
    assert (
        backend.why_failed(1, "Error: Failed to get process executable name. Check that the process is running.").reason
        == "not_found"
    )
    scope = Path(os.devnull)
    assert backend.ptrace_scope(scope) is None


def test_the_watch_sampler_counts_its_dumps_and_says_why_when_it_has_none(monkeypatch):
    threads, pid = recorded_dump()
    sampler = PySpySampler(lambda: [pid], every_s=10.0, dump=lambda p: threads)
    for _ in range(3):
        sampler.sample_once()
    s = sampler.stop()
    assert s.available and s.dumps == 3 and s.processes == [pid] and s.main_shares == {"input_wait": 1.0}
    console = Console(width=200, record=True, color_system=None)
    render_pyspy(s, console)
    text = console.export_text()
    assert f"3 dumps of process {pid}, one every 10 s): the main thread waits for input 100%" in text
    assert "pyspy_workload.py:31 <module> (waits for input)" in text
    # not permitted: said, with what would permit it
    denied = Unavailable("no_permission", f"py-spy may not read process {pid}: {backend.permission_hint(1, 1000)}")
    s = PySpySampler(lambda: [pid], dump=lambda p: denied)
    s.sample_once()
    out = s.stop()
    assert out.dumps == 0 and "may not read process" in out.why and "ptrace_scope is 1" in out.why
    # not installed
    monkeypatch.setattr(backend, "executable", lambda: None)
    missing = started(lambda: [pid], 10.0).stop()
    assert not missing.available and missing.why == "py-spy is not installed (pip install py-spy)"
    assert started(lambda: [pid], 0.0).stop().why.startswith("off")
    console = Console(width=200, record=True, color_system=None)
    render_pyspy(PySpyStacks(available=False, why=missing.why), console)
    assert "python stacks (py-spy): none: py-spy is not installed" in console.export_text()


def test_watch_ends_with_what_py_spy_saw():
    r = subprocess.run(
        [sys.executable, "-m", "gputriage", "watch", "--seconds", "1", "--no-store"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "python stacks (py-spy)" in r.stdout


def test_a_dumped_thread_of_torch_s_waiting_in_its_code_waits(tmp_path):
    # py-spy's frames carry no code object: a thread of torch's own (inductor's compile-worker pool reading its pipe)
    # is judged by its line's text, as in the workload, and a torch op stays a launch
    pool = tmp_path / "site-packages" / "torch" / "_inductor" / "compile_worker" / "subproc_pool.py"
    pool.parent.mkdir(parents=True)
    pool.write_text("def _recv_msg(read_pipe):\n    return read_pipe.read(8)\n\ndef op(x):\n    return x.relu()\n")
    threads = [
        {"pid": 7, "thread_id": 1, "thread_name": "MainThread", "owns_gil": False, "active": True,
         "frames": [{"name": "op", "filename": str(pool), "line": 5}]},
        {"pid": 7, "thread_id": 2, "thread_name": "pool", "owns_gil": False, "active": False,
         "frames": [{"name": "_recv_msg", "filename": str(pool), "line": 2}]},
    ]  # fmt: skip
    got = by_thread(threads, 7)
    assert got["pool"][0] == "input_wait" and got["MainThread"][0] == "launch"
