"""The Python stacks of the processes holding a GPU, from py-spy (`backends.pyspy`), for what gputriage did not start
(`watch`): one dump per process every `every_s` (10 s by default: each pauses the process a few milliseconds), each
thread's stack classified by the stack sampler's own rules (`inworkload.stack_sampler.Classifier`: waiting on the
GPU, waiting for input, copying, computing on the host, compiling, launching, a training framework's loop, a
library's ops on the CPU) and counted per line. The libraries beside torch (CuPy, JAX, ...) are taken to compute on
the GPU (these processes hold one); a frame of py-spy holds no variables, so a workload line's names resolve through
its file's imports (`import cupy as cp`), an ONNX Runtime session's providers are unknown (its run: a launch), and an
array's type on an operator's line (`x * 2`) is out of sight.

py-spy gives file names as the traced process sees them: its standard library (`.../lib/python3.X/...`, outside
site-packages) is read as this interpreter's, so a wait in `threading.py` or `queue.py` is a wait whichever Python
runs it; a line's text is read from the file where it lies (the same machine)."""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, cast

from gputriage.backends import pyspy
from gputriage.backends.nvml import NvmlBackend
from gputriage.backends.nvml_queries import compute_processes
from gputriage.inworkload.stack_categories import CATEGORIES
from gputriage.inworkload.stack_classify import Classifier
from gputriage.inworkload.stack_libraries import OnGpu
from gputriage.inworkload.stack_sampler import Counts
from gputriage.model.pyspy import PySpyStacks
from gputriage.model.reading import Unavailable
from gputriage.model.run import HostLine

EVERY_S = 10.0
TOP_LINES = 8
STDLIB = re.compile(r"^.*/lib/python3\.\d+/(?!.*-packages/)(.+\.py)$")
OUR_STDLIB = os.path.dirname(os.path.abspath(os.__file__)) + os.sep  # as the classifier tells the standard library


@dataclass
class _Code:
    co_filename: str
    co_name: str


@dataclass
class _Frame:
    """A py-spy frame in the shape the classifier reads a live frame."""

    f_code: _Code
    f_lineno: int
    f_back: Optional[_Frame]


def _path(filename: str) -> str:
    m = STDLIB.match(filename.replace("\\", "/"))
    return OUR_STDLIB + m.group(1) if m else filename


def as_frames(frames: list[dict[str, Any]]) -> Optional[_Frame]:
    """py-spy's frames (innermost first) as a chain of frames, innermost returned."""
    inner: Optional[_Frame] = None
    for f in reversed(frames):
        if not isinstance(f, dict):
            continue
        line = f.get("line")
        name = str(f.get("name") or "?").rsplit(".", 1)[-1]  # py-spy names a method by its qualified name
        inner = _Frame(
            _Code(_path(str(f.get("filename") or "<unknown>")), name), line if isinstance(line, int) else 0, inner
        )
    return inner


def count_dump(threads: list[Any], pid: int, counts: Counts, classifier: Classifier, cuda: bool = True) -> int:
    """One dump's threads classified and counted (gputriage's own threads left out); the threads counted."""
    n = 0
    for t in threads:
        if not isinstance(t, dict) or str(t.get("thread_name") or "").startswith("gputriage-"):
            continue
        frame = as_frames(t.get("frames") or [])
        if frame is None:
            continue
        cat, line, loader = classifier.classify(cast(Any, frame), cuda)
        main = t.get("os_thread_id") == pid or (t.get("os_thread_id") is None and n == 0)
        counts.add(cat, line, main, loader)
        n += 1
    counts.ticks += 1
    return n


def summary(counts: Counts, dumps: int, every_s: float, pids: list[int], failed: dict[str, str]) -> PySpyStacks:
    """The counts as shares: the main threads' time per category, and the top lines."""
    main_total = sum(counts.main)
    out = PySpyStacks(available=True, every_s=every_s, dumps=dumps, processes=sorted(pids), failed=failed)
    if main_total:
        out.main_shares = {c: round(v / main_total, 3) for c, v in zip(CATEGORIES, counts.main) if v}
    others = sum(counts.all) - main_total
    rows = counts.snapshot()["lines"]
    lines = []
    for file, line, function, category, main, every, _own in rows:  # own: judged for this interpreter, not theirs
        if main > 0 and main_total:
            lines.append(HostLine(file=file, line=line, function=function, category=category, share=main / main_total))
        elif every - main > 0 and others:
            lines.append(
                HostLine(
                    file=file,
                    line=line,
                    function=function,
                    category=category,
                    share=(every - main) / max(1, dumps),
                    main=False,
                )
            )
    out.lines = sorted(lines, key=lambda x: (-x.share, not x.main))[:TOP_LINES]  # the main thread first
    return out


def gpu_pids(nvml: NvmlBackend | None, gpus: list[int], own: int) -> list[int]:
    """The processes holding a context on the sampled GPUs (gputriage's own left out)."""
    if nvml is None or not gpus:
        return []
    listed = compute_processes(nvml, gpus)
    return sorted({int(p["pid"]) for ps in listed.values() for p in ps if p.get("pid") not in (None, own)})


class PySpySampler:
    """A thread dumping each process `pids()` names every `every_s`, from its start; `stop()` gives the summary."""

    def __init__(
        self,
        pids: Callable[[], list[int]],
        every_s: float = EVERY_S,
        dump: Callable[[int], Any] = pyspy.dump,
        on_dump: Callable[[int, float, list[Any]], None] | None = None,
    ) -> None:
        """`on_dump(pid, unix s, threads)`: called with each dump that gave stacks (a hang's watch reads them)."""
        self.pids, self.every_s, self.dump, self.on_dump = pids, every_s, dump, on_dump
        self.counts, self.classifier = Counts(), Classifier(OnGpu(assume=True))  # processes that hold a GPU
        self.dumps = 0
        self.seen: set[int] = set()
        self.failed: dict[str, str] = {}
        self.why = ""
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> PySpySampler:
        missing = pyspy.missing(self.dump)
        if missing is not None:
            self.why = missing.detail
            return self
        self.thread = threading.Thread(target=self._loop, name="gputriage-pyspy", daemon=True)
        self.thread.start()
        return self

    def _loop(self) -> None:
        while True:
            self.sample_once()
            if self.done.wait(self.every_s):
                return

    def sample_once(self) -> None:
        """One dump of each process holding a GPU now."""
        for pid in self.pids():
            got = self.dump(pid)
            with self.lock:
                if isinstance(got, Unavailable):
                    self.failed[str(pid)] = got.detail or got.reason
                    continue
                if count_dump(got, pid, self.counts, self.classifier):
                    self.dumps += 1
                    self.seen.add(pid)
                    self.failed.pop(str(pid), None)
            if self.on_dump is not None and isinstance(got, list):
                self.on_dump(pid, time.time(), got)

    def stop(self, timeout_s: float = 15.0) -> PySpyStacks:
        self.done.set()
        if self.thread is not None:
            self.thread.join(timeout_s)
        if self.why:
            return PySpyStacks(available=False, why=self.why, every_s=self.every_s)
        with self.lock:
            out = summary(self.counts, self.dumps, self.every_s, list(self.seen), dict(self.failed))
        if not self.dumps:
            out.why = "; ".join(sorted(set(self.failed.values()))) or "no process held a GPU while watched"
        return out


def started(
    pids: Callable[[], list[int]],
    every_s: float = EVERY_S,
    on_dump: Callable[[int, float, list[Any]], None] | None = None,
) -> PySpySampler:
    """A sampler started now (every_s <= 0: none, said as such)."""
    sampler = PySpySampler(pids, every_s, on_dump=on_dump)
    if every_s <= 0:
        sampler.why = "off (--stacks-every 0)"
        return sampler
    return sampler.start()
