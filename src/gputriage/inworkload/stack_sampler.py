"""Where a Python workload's threads spend their time, sampled from inside it under `gputriage run` (standard
library only; loaded with the allocator's counters by the injected `sitecustomize`, `trace.inject`).

A daemon thread takes `sys._current_frames()` RATE_HZ times a second and classifies each Python thread's stack (its
own and gputriage's left out) into CATEGORIES by its innermost frames or, since tensor methods are C and show no
frame, by the text of the innermost line: gpu_wait (`.item()`, `.cpu()`, `.tolist()`, `synchronize(`, torch.cuda's
waits, printing a tensor); input_wait (queue, lock, selector, socket, pipe, subprocess and future waits, `sleep(`, a
queue's `.get(`, torch's own threads reading a pipe or sleeping; under a DataLoader's frames counted apart,
`main_loader`); copy (`.to(`, `.cuda(`, `copy_(`, `pin_memory(`, a module moved); compile (dynamo's frame
conversion, inductor's compile and autotuning); gc (`gc.callbacks`); launch (torch's Python code, or a workload line
inside a forward or calling `torch.`, `F.`, `@`, `.backward(`: a heuristic, an ATen op is C); host_compute (the
rest, and all of it in a process without CUDA). The GPU libraries beside torch (CuPy, JAX, numba, Triton,
TensorFlow, ONNX Runtime) and the training frameworks (Lightning, the Trainer, Accelerate) are read by
`stack_libraries`: their frames' functions, or a workload line's names resolved to their modules (a call into
compiled code shows no frame), name their launches, waits, copies and compiling; a framework's own code is `loop`, a
library computing on the CPU `host_ops`; a process whose library computes on the GPU counts as one using CUDA. A
sample needs the interpreter lock, so a thread computing 2 ms between waits is seen waiting: the report carries the
main thread's CPU time, and the reader caps its waits at its time off the CPU (`sampling.progress`). For the same
reason a thread computing in Python between torch calls is seen at the calls, which give the lock up
(docs/measurements.md: 68% at a `torch.tensor` line where py-spy sees 2.6%). Counts per
category and per line (the innermost frame outside the standard library, site-packages and gputriage), and the GPU
libraries the process imported, are written every WRITE_S as `stacks.PID.json`, replaced atomically.

collective_wait: the innermost frame outside the standard library is torch.distributed's (a collective, a barrier,
the rendezvous; not its launcher, not an import), or, in a process with a process group, the workload's line waits on
a handle (`work.wait()`). In a rank of a distributed job (`rank_clock`: RANK and its launchers' variables), the time
its main thread blocked inside autograd's backward goes to collective_wait too (the gradients' all-reduce waits
there for the other ranks); the report then carries who the rank is, its steps, its time waiting for a CPU, and where
its main thread is now.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import importlib.util
import json
import os
import sys
import threading
import time
from types import FrameType
from typing import Any, Optional

DIR_ENV = "GPUTRIAGE_PROGRESS_DIR"
PREFIX = "stacks."


def _sibling(module: str) -> Any:
    """A module of this folder (`stack_categories`, the vocabulary; `stack_libraries`; `stack_classify`): imported
    where this module is gputriage's, else loaded by its path, as this file is inside the workload (`trace.inject`),
    whose interpreter may hold another gputriage, or none."""
    if __name__ == "gputriage.inworkload.stack_sampler":
        return importlib.import_module(f"gputriage.inworkload.{module}")
    name = f"gputriage_{module}"
    if name not in sys.modules:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{module}.py")
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[name] = loaded
        spec.loader.exec_module(loaded)
    return sys.modules[name]


_V = _sibling("stack_categories")
_L = _sibling("stack_libraries")  # the GPU libraries beside torch, the training frameworks
_RANKS = _sibling("rank_clock")  # a rank of a distributed job: its steps, its main thread's waits, where it is now
_C = _sibling("stack_classify")  # what a stack's frames do: its category and its line
CATEGORIES: tuple[str, ...] = _V.CATEGORIES
Classifier, own, GC_LINE = _C.Classifier, _C.own, _C.GC_LINE
_GC, _HOST, _LAUNCH, _COLLECTIVE = _C._GC, _C._HOST, _C._LAUNCH, _C._COLLECTIVE
RATE_HZ = 50.0  # samples a second (benchmarks/stack_sampler_overhead.py measures what they cost)
WRITE_S = 0.5  # the report's refresh: at least once in each 1 s window (a write: 0.5 ms of syscalls on a VM)
TOP_LINES = 50  # lines written, by the main thread's samples and by all threads'
MAX_LINES = 4096  # lines counted; beyond, new lines count under OTHER
OTHER = ("<other lines>", 0, "")


class Counts:
    """Samples per category (the main thread's, all threads') and per line, since the sampler started."""

    def __init__(self) -> None:
        self.ticks = 0.0  # sampling rounds (the main thread is sampled at each)
        self.main = [0.0] * len(CATEGORIES)
        self.all = [0.0] * len(CATEGORIES)
        self.main_loader = 0.0  # the main thread's input waits under a DataLoader
        self.lines: dict[tuple[str, int, str, int], list[float]] = {}  # (file, line, function, category) -> main, all

    def add(self, cat: int, line: tuple[str, int, str], main: bool, loader: bool, weight: float = 1.0) -> None:
        self.all[cat] += weight
        if main:
            self.main[cat] += weight
            self.main_loader += weight if loader else 0.0
        key = (*line, cat)
        row = self.lines.get(key)
        if row is None:
            if len(self.lines) >= MAX_LINES:
                key = (*OTHER, cat)
                row = self.lines.setdefault(key, [0.0, 0.0])
            else:
                row = self.lines[key] = [0.0, 0.0]
        row[1] += weight
        if main:
            row[0] += weight

    def snapshot(self) -> dict[str, Any]:
        rows = self.lines.items()
        top = {k for k, _ in sorted(rows, key=lambda kv: -kv[1][0])[:TOP_LINES] if self.lines[k][0] > 0}
        top |= {k for k, _ in sorted(rows, key=lambda kv: -kv[1][1])[:TOP_LINES]}
        lines = [  # the last column: 1 for a line of the workload's own code (`own`)
            [k[0], k[1], k[2], CATEGORIES[k[3]], round(self.lines[k][0], 2), round(self.lines[k][1], 2), own(k[0])]
            for k in sorted(top, key=lambda k: -self.lines[k][1])
        ]
        counts = {"main": dict(zip(CATEGORIES, self.main)), "all": dict(zip(CATEGORIES, self.all))}
        return {"ticks": self.ticks, **counts, "main_loader": self.main_loader, "lines": lines}


class GcClock:
    """Seconds spent in garbage collection, by the main thread and by the others (`gc.callbacks`)."""

    def __init__(self) -> None:
        self.main_ident = threading.main_thread().ident
        self.started: dict[int, float] = {}
        self.main_s = self.other_s = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        ident = threading.get_ident()
        if phase == "start":
            self.started[ident] = time.perf_counter()
            return
        t0 = self.started.pop(ident, None)
        if t0 is not None and ident == self.main_ident:
            self.main_s += time.perf_counter() - t0
        elif t0 is not None:
            self.other_s += time.perf_counter() - t0

    def take(self) -> tuple[float, float]:
        out = self.main_s, self.other_s
        self.main_s -= out[0]
        self.other_s -= out[1]
        return out


def _cuda_ready() -> bool:
    torch = sys.modules.get("torch")
    try:
        return not getattr(torch.__spec__, "_initializing", True) and bool(torch.cuda.is_initialized())  # type: ignore
    except Exception:  # no torch, or one without CUDA
        return False


def _spawned_child() -> bool:
    """A process `multiprocessing` started (a spawned DataLoader worker): a helper, not a launching process."""
    mp = sys.modules.get("multiprocessing")
    try:
        return mp is not None and mp.parent_process() is not None
    except Exception:
        return False


class StackSampler:
    """The sampling thread and its report file."""

    def __init__(self, folder: str, rate_hz: float = RATE_HZ, write_s: float = WRITE_S) -> None:
        self.path = os.path.join(folder, f"{PREFIX}{os.getpid()}.json")
        self.period_s, self.write_s, self.rate_hz = 1.0 / rate_hz, write_s, rate_hz
        self.counts, self.classifier, self.gc = Counts(), Classifier(), GcClock()
        self.lock = threading.Lock()
        self.started_s = time.time()
        self.skip: set[int] = set()
        self.threads = 0  # threads seen at the last sample
        self.last: dict[int, tuple[FrameType, int, bool, tuple[int, tuple[str, int, str], bool]]] = {}
        self.cuda = False
        try:  # the main thread's CPU time, read from this thread: what the samples miss of its running (below)
            self.main_clock: Optional[int] = time.pthread_getcpuclockid(self.gc.main_ident or 0)
        except (AttributeError, OSError):
            self.main_clock = None
        self.main_cpu_s: Optional[float] = None
        self.cpu0_s = 0.0
        who = _RANKS.identity(os.environ)
        native = threading.main_thread().native_id
        self.rank = None if who is None else _RANKS.RankClock(who, self.gc.main_ident, native, self.classifier.kind)
        if self.rank is not None:  # the categories a backward's blocked time is taken from, and given to
            self.rank.split = ((_LAUNCH, _HOST), _COLLECTIVE)

    def _refresh_skipped(self) -> None:
        own = threading.get_ident()
        ours = [t for t in threading.enumerate() if t.ident == own or t.name.startswith("gputriage-")]
        self.skip = {t.ident for t in ours if t.ident is not None}
        self.classifier.libs.refresh()  # which libraries beside torch compute on the GPU
        self.cuda = self.cuda or _cuda_ready() or self.classifier.libs.on_gpu.any()
        if self.rank is not None:
            self.classifier.distributed = self.classifier.distributed or _RANKS.distributed_ready()

    def sample(self) -> None:
        """One round: every thread's stack, classified and counted."""
        main = self.gc.main_ident
        frames = sys._current_frames()
        if len(frames) != self.threads:  # a thread started or ended: gputriage's own are left out from now
            self.threads = len(frames)
            self._refresh_skipped()
        c, cuda = self.counts, self.cuda
        last, seen = self.last, {}
        with self.lock:
            c.ticks += 1
            for ident, frame in frames.items():
                if ident in self.skip:
                    continue
                before = last.get(ident)
                # a thread still at the same instruction of the same frame (blocked, or in one long C call) has
                # the same stack: classified once
                if before is not None and before[0] is frame and before[1] == frame.f_lasti and before[2] == cuda:
                    got = before[3]
                else:
                    got = self.classifier.classify(frame, cuda)
                seen[ident] = (frame, frame.f_lasti, cuda, got)
                if ident == main and self.rank is not None:
                    self.rank.count(time.time(), frame, got, c, self.classifier.distributed)
                else:
                    c.add(got[0], got[1], ident == main, got[2])
            self.last = seen
            gc_main, gc_other = self.gc.take()
            if gc_main > 0:
                c.ticks += gc_main * self.rate_hz  # rounds the collection kept this thread from
                c.add(_GC, GC_LINE, True, False, gc_main * self.rate_hz)
            if gc_other > 0:
                c.add(_GC, GC_LINE, False, False, gc_other * self.rate_hz)
        del frames

    def _main_cpu(self) -> Optional[float]:
        if self.main_clock is not None:
            try:
                self.main_cpu_s = time.clock_gettime(self.main_clock)
            except OSError:  # the main thread has ended: its last reading stands
                self.main_clock = None
        return self.main_cpu_s

    def write(self) -> None:
        cpu = self._main_cpu()
        with self.lock:
            report = self.counts.snapshot()
        now = time.time()
        report.update(pid=os.getpid(), t_s=now, wall_s=now - self.started_s, rate_hz=self.rate_hz, cuda=self.cuda)
        report.update(main_cpu_s=None if cpu is None else cpu - self.cpu0_s, child=_spawned_child())
        if self.rank is not None:
            report.update(self.rank.report(now, sys._current_frames(), CATEGORIES))
        report.update(libraries=_L.imported())  # the GPU libraries and frameworks it imported, with their versions
        tmp = f"{self.path}.tmp"
        with contextlib.suppress(OSError):  # a folder gone: the run is over
            with open(tmp, "w") as fh:
                json.dump(report, fh, separators=(",", ":"))
            os.replace(tmp, self.path)

    def run(self, stop: threading.Event) -> None:
        gc.callbacks.append(self.gc)
        self.cpu0_s = self._main_cpu() or 0.0
        self.started_s = time.time()
        try:
            self._refresh_skipped()
            next_write = time.monotonic() + self.write_s
            while not stop.is_set():
                time.sleep(self.period_s)  # cheaper to wake from than Event.wait
                self.sample()
                if time.monotonic() >= next_write:
                    self._refresh_skipped()
                    self.write()
                    next_write = time.monotonic() + self.write_s
            self.write()
        finally:
            self.last = {}  # no frame kept alive once stopped
            if self.rank is not None:
                self.rank.close()
            with contextlib.suppress(ValueError):
                gc.callbacks.remove(self.gc)


def start(folder: str, stop: Optional[threading.Event] = None, rate_hz: float = RATE_HZ) -> threading.Thread:
    """The thread, started: sampling this process's threads into `folder` until `stop` is set or the interpreter
    exits (a last report then)."""
    until = stop or threading.Event()
    sampler = StackSampler(folder, rate_hz)
    t = threading.Thread(target=sampler.run, args=(until,), name="gputriage-stacks", daemon=True)
    t.start()
    if stop is None:  # stopped at exit, its last report written (atexit calls the last registered first)
        atexit.register(t.join, 1.0)
        atexit.register(until.set)
    return t


def main() -> Optional[threading.Thread]:
    """Start the thread in this interpreter (what the injected `sitecustomize` calls)."""
    folder = os.environ.get(DIR_ENV)
    return start(folder) if folder else None
