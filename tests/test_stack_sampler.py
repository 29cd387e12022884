"""The stack sampler loaded into a Python workload (`gputriage.inworkload.stack_sampler`): what each stack is
classified as, from real frames of real threads (waiting on a queue, sleeping, building lists, blocked in C on a
line that reads a tensor back), and frames of code compiled under torch's file names; its counts and report."""

from __future__ import annotations

import gc
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from gputriage.inworkload import stack_classify as sc
from gputriage.inworkload import stack_sampler as ss

WORKLOAD = Path(__file__).parent / "workloads" / "queue_lists_loop.py"
SITE = "/usr/lib/python3/site-packages"


class Blocked:
    """A thread blocked where `target` blocks, until released."""

    def __init__(self, target: Callable[[threading.Event], Any]) -> None:
        self.release = threading.Event()
        self.thread = threading.Thread(target=target, args=(self.release,), daemon=True)

    def __enter__(self) -> Blocked:
        self.thread.start()
        return self

    def frame(self, settle: Callable[[Any], bool] = lambda f: True) -> Any:
        """The thread's innermost frame, once `settle` accepts it."""
        for _ in range(500):
            f = sys._current_frames().get(self.thread.ident or -1)
            if f is not None and settle(f):
                return f
            time.sleep(0.01)
        raise AssertionError("the thread never reached the expected frame")

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.thread.join(5)


def blocked_in(f: Any, function: str) -> bool:
    return f.f_code.co_name == function


def classify(frame: Any, cuda: bool = True) -> tuple[str, tuple[str, int, str], bool]:
    cat, line, loader = sc.Classifier().classify(frame, cuda)
    return ss.CATEGORIES[cat], line, loader


def torch_code(path: str, source: str) -> dict[str, Any]:
    """Functions defined in `source` as if they were torch's own file `path` (under site-packages)."""
    scope: dict[str, Any] = {"threading": threading, "queue": queue}
    exec(compile(source, f"{SITE}/torch/{path}", "exec"), scope)
    return scope


def test_a_thread_waiting_on_a_queue_waits_for_input_at_its_own_line():
    q: queue.Queue[int] = queue.Queue()

    def consume(release: threading.Event) -> None:
        q.get()  # the line named

    with Blocked(consume) as b:
        frame = b.frame(lambda f: f.f_code.co_filename.endswith("threading.py"))
        cat, (file, line, function), loader = classify(frame)
        q.put(1)
    assert cat == "input_wait" and not loader
    assert file == __file__ and function == "consume"
    assert "q.get()" in Path(file).read_text().splitlines()[line - 1]


def test_a_sleeping_thread_waits_for_input_and_a_thread_building_lists_computes():
    def sleeper(release: threading.Event) -> None:
        while not release.is_set():
            time.sleep(0.05)

    def builder(release: threading.Event) -> None:
        while not release.is_set():
            rows = [[float(i) for i in range(200)] for _ in range(200)]
            del rows

    with Blocked(sleeper) as s, Blocked(builder) as b:
        sleeping = classify(s.frame(lambda f: f.f_code.co_name == "sleeper"), cuda=False)
        building = [classify(b.frame(), cuda=False) for _ in range(5)]
    assert sleeping[0] == "input_wait" and sleeping[1][2] == "sleeper"
    for cat, (file, _, function), _ in building:
        # the interpreter lock handed over mid-loop, or between two batches (Event.is_set is no wait)
        assert cat == "host_compute" and file == __file__ and function in ("builder", "<listcomp>")


def test_a_line_reading_a_tensor_back_waits_on_the_gpu_only_where_cuda_is_in_use():
    locks = [threading.Lock(), threading.Lock()]
    for lock in locks:
        lock.acquire()
    tensor = type("Tensor", (), {})()
    tensor.item = locks[0].acquire  # a C call that blocks: no Python frame of its own, as Tensor.item
    tensor.to = locks[1].acquire

    def read_back(release: threading.Event) -> None:
        value = tensor.item()  # blocks in C
        del value

    def move(release: threading.Event) -> None:
        moved = tensor.to()  # blocks in C
        del moved

    with Blocked(read_back) as r, Blocked(move) as m:
        waiting = r.frame(lambda f: blocked_in(f, "read_back"))
        moving = m.frame(lambda f: blocked_in(f, "move"))
        assert classify(waiting)[0] == "gpu_wait"
        assert classify(waiting, cuda=False)[0] == "host_compute"
        assert classify(moving)[0] == "copy"
        for lock in locks:
            lock.release()


def test_torch_frames_name_what_the_thread_does():
    # each blocks in C (a lock), as torch's ops do: the torch frame is the innermost
    sync = torch_code("cuda/__init__.py", "def synchronize(lock):\n    lock.acquire()\n")
    compiling = torch_code("_dynamo/convert_frame.py", "def _compile(release):\n    release.wait()\n")
    loader = torch_code("utils/data/dataloader.py", "def _next_data(q):\n    return q.get()\n")
    module = torch_code(
        "nn/modules/module.py",
        "def _call_impl(forward):\n    return forward()\n"
        "def _apply(lock):\n    lock.acquire()\n"
        "def to(lock):\n    return _apply(lock)\n",
    )
    functional = torch_code("nn/functional.py", "def linear(lock):\n    lock.acquire()\n")
    q: queue.Queue[int] = queue.Queue()
    locks = [threading.Lock() for _ in range(4)]
    for lock in locks:
        lock.acquire()

    def forward() -> None:
        y = locks[1].acquire()  # an op of the model's forward, in C
        del y

    def model_to(release: threading.Event) -> None:
        module["to"](locks[2])

    with (
        Blocked(lambda release: sync["synchronize"](locks[0])) as s,
        Blocked(compiling["_compile"]) as c,
        Blocked(lambda release: loader["_next_data"](q)) as d,
        Blocked(lambda release: module["_call_impl"](forward)) as f,
        Blocked(model_to) as m,
        Blocked(lambda release: functional["linear"](locks[3])) as op,
    ):
        assert classify(s.frame(lambda fr: blocked_in(fr, "synchronize")))[0] == "gpu_wait"
        assert classify(c.frame(lambda fr: blocked_in(fr, "wait")))[0] == "compile"
        cat, line, on_loader = classify(d.frame(lambda fr: fr.f_code.co_filename.endswith("threading.py")))
        assert (cat, on_loader) == ("input_wait", True) and line[2] == "<lambda>"
        cat, line, _ = classify(f.frame(lambda fr: blocked_in(fr, "forward")))
        assert cat == "launch" and line[2] == "forward"
        assert classify(f.frame(lambda fr: blocked_in(fr, "forward")), cuda=False)[0] == "host_compute"
        cat, line, _ = classify(m.frame(lambda fr: blocked_in(fr, "_apply")))
        assert cat == "copy" and line[2] == "model_to"  # a module moved: the workload's line that moved it
        cat, line, _ = classify(op.frame(lambda fr: blocked_in(fr, "linear")))
        assert cat == "launch" and line[2] == "<lambda>"
        q.put(1)
        for lock in locks:
            lock.release()


def test_torch_s_own_threads_that_wait_are_waiting_not_launching(tmp_path):
    # inductor's compile-worker pool reads its pipe, its timer sleeps: in torch's code, blocked in C
    pool = tmp_path / "lib" / "site-packages" / "torch" / "_inductor" / "compile_worker" / "subproc_pool.py"
    pool.parent.mkdir(parents=True)
    pool.write_text(
        "def _recv_msg(read_pipe):\n    return read_pipe.read(8)\n\n"
        "def check():\n    sleep(60)\n\n"
        "def op(lock):\n    lock.acquire()\n"
    )
    scope: dict[str, Any] = {}
    exec(compile(pool.read_text(), str(pool), "exec"), scope)
    read_fd, write_fd = os.pipe()
    locks = [threading.Lock() for _ in range(2)]
    for lock in locks:
        lock.acquire()
    scope["sleep"] = locks[0].acquire  # as `from time import sleep` would, blocking in C until released
    with (
        os.fdopen(read_fd, "rb", buffering=0) as pipe,
        Blocked(lambda release: scope["_recv_msg"](pipe)) as reader,
        Blocked(lambda release: scope["check"]()) as timer,
        Blocked(lambda release: scope["op"](locks[1])) as op,
    ):
        assert classify(reader.frame(lambda fr: blocked_in(fr, "_recv_msg")))[0] == "input_wait"
        assert classify(timer.frame(lambda fr: blocked_in(fr, "check")))[0] == "input_wait"
        assert classify(op.frame(lambda fr: blocked_in(fr, "op")))[0] == "launch"  # a torch op in C
        os.write(write_fd, b"12345678")
        for lock in locks:
            lock.release()
    os.close(write_fd)


@pytest.mark.parametrize(
    "path, kind",
    [
        (os.__file__, sc.STDLIB),
        ("<frozen importlib._bootstrap>", sc.STDLIB),
        ("<string>", sc.USER),
        ("/home/u/train.py", sc.USER),
        (f"{SITE}/numpy/core/fromnumeric.py", sc.LIBRARY),
        (f"{SITE}/torch/nn/functional.py", sc.TORCH),
        (f"{SITE}/torch/nn/modules/module.py", sc.MODULE),
        (f"{SITE}/torch/_inductor/compile_fx.py", sc.COMPILER),
        ("/tmp/torchinductor_u/ab/cab12.py", sc.TORCH),
        # inductor's cache dir given another name (TORCHINDUCTOR_CACHE_DIR): its files still are its generated code
        ("/scratch/cache/4z/c4z7h42jtgfwaapdgcl3aqjoz3dwkzjaqgdwhsh2irxitkywzqky.py", sc.TORCH),
        ("/home/u/ab/cab.py", sc.USER),
        (f"{SITE}/torch/utils/data/dataloader.py", sc.LOADER),
        (f"{SITE}/torch/utils/data/_utils/pin_memory.py", sc.PINNING),
        (f"{SITE}/torch/_tensor_str.py", sc.TORCH_SYNC),
        (ss.__file__, sc.LIBRARY),
    ],
)
def test_what_a_file_is(path, kind):
    assert sc.file_kind(path) == kind


def test_counts_keep_the_main_thread_apart_and_stay_bounded(monkeypatch):
    monkeypatch.setattr(ss, "MAX_LINES", 3)
    monkeypatch.setattr(ss, "TOP_LINES", 2)
    c = ss.Counts()
    c.add(1, ("a.py", 1, "f"), main=True, loader=True)
    c.add(3, ("a.py", 2, "f"), main=True, loader=False)
    c.add(1, ("a.py", 9, "producer"), main=False, loader=False)
    c.add(1, ("a.py", 9, "producer"), main=False, loader=False)
    c.add(3, ("b.py", 5, "g"), main=True, loader=False)  # a fourth line: counted under OTHER
    report = c.snapshot()
    assert report["main"]["input_wait"] == 1 and report["all"]["input_wait"] == 3
    assert report["main"]["host_compute"] == 2 and report["main_loader"] == 1
    lines = {(r[0], r[1]): r for r in report["lines"]}
    assert lines[("a.py", 9)][4:6] == [0.0, 2.0]  # the producer's: no main-thread sample
    assert lines[("a.py", 9)][6] == 1  # the workload's own code
    assert [sc.own(p) for p in (threading.__file__, ss.GC_LINE[0], ss.__file__, ss.OTHER[0])] == [0, 0, 0, 1]
    assert (*ss.OTHER, 3) in c.lines and len(c.lines) == 4
    assert len(report["lines"]) <= 2 * 2


def test_garbage_collection_is_timed_on_the_thread_that_collects():
    clock = ss.GcClock()
    clock("start", {})
    sum(range(10000))
    clock("stop", {})
    main_s, other_s = clock.take()
    assert main_s > 0 and other_s == 0
    assert clock.take() == (0.0, 0.0)


def test_a_sampler_thread_reports_the_threads_of_its_process(tmp_path):
    q: queue.Queue[int] = queue.Queue()
    stop = threading.Event()
    waiter = threading.Thread(target=q.get, name="waiter", daemon=True)
    waiter.start()
    t = ss.start(str(tmp_path), stop, rate_hz=200)
    deadline = time.time() + 10
    while time.time() < deadline and not list(tmp_path.glob("stacks.*.json")):
        time.sleep(0.05)
    time.sleep(0.3)
    stop.set()
    t.join(5)
    q.put(1)
    report = json.loads((tmp_path / f"stacks.{os.getpid()}.json").read_text())
    assert report["ticks"] > 0 and report["pid"] == os.getpid() and report["cuda"] is False
    assert report["main_cpu_s"] is not None and report["wall_s"] > 0
    waits = [r for r in report["lines"] if r[3] == "input_wait" and r[4] == 0]
    assert waits and all(r[5] > 0 for r in waits)  # the waiter thread's queue.get, off the main thread
    assert not any(r[0] == ss.__file__ for r in report["lines"])  # its own thread left out
    assert not any(isinstance(cb, ss.GcClock) for cb in gc.callbacks)  # its collection clock removed


def run_workload(tmp_path: Path, seconds: float = 3.0) -> dict[str, Any]:
    env = dict(os.environ, GPUTRIAGE_PROGRESS_DIR=str(tmp_path), PYTHONPATH=str(tmp_path / "site"))
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        f"import importlib.util as u\nspec = u.spec_from_file_location("
        f"'gputriage_stack_sampler', {ss.__file__!r})\nm = u.module_from_spec(spec)"
        "\nspec.loader.exec_module(m)\nm.main()\n"
    )
    subprocess.run(
        [sys.executable, str(WORKLOAD), "--seconds", str(seconds)],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    (report,) = [json.loads(p.read_text()) for p in tmp_path.glob("stacks.*.json")]
    return report


def test_the_workload_s_wait_and_its_list_building_are_its_lines(tmp_path):
    report = run_workload(tmp_path)
    source = WORKLOAD.read_text().splitlines()
    by_text: dict[str, list[Any]] = {}
    for file, line, function, cat, main, every, own in report["lines"]:
        assert own == (file == str(WORKLOAD))  # the workload's lines, and no other (gc, threading), as its own code
        if file == str(WORKLOAD):
            by_text.setdefault(source[line - 1].strip().split("  #")[0], []).append((function, cat, main, every))
    assert ("main", "input_wait") in {(f, c) for f, c, *_ in by_text["item = q.get()"]}
    assert "host_compute" in {c for _, c, *_ in by_text["rows = [[item * i for i in range(500)] for _ in range(400)]"]}
    assert {(f, c) for f, c, main, _ in by_text["time.sleep(PERIOD_S)"]} == {("producer", "input_wait")}
    assert all(main == 0 for *_, main, _ in by_text["time.sleep(PERIOD_S)"])
    assert report["main"]["input_wait"] > 0 and report["main"]["host_compute"] > 0
    assert report["main_cpu_s"] > 0
