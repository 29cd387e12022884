"""A rank of a distributed job, seen from inside it by the stack sampler's thread (`stack_sampler`; standard library
only): who it is (`identity`: RANK, LOCAL_RANK and WORLD_SIZE as torchrun, `accelerate launch` and deepspeed set them,
else OpenMPI's, PMI's or Slurm's, and the launcher's job id), how long its steps take, how long its main thread waited
for a core or blocked, and where its main thread is now (for a hang: how long it has been there, and its stack).

Steps: where the workload reports them (`gputriage.step()`, this process's counter in `inworkload.progress`), each
advance of the counter seen at a sampling round; else the period of its main loop, seen as the backward jumps of the
line of the outermost frame of its own code that loops (an iteration shorter than two rounds can be missed: the
period is then over-estimated). Either way a histogram of step durations (`step_bin`), cumulative, so a reader that
misses a report loses nothing. The main thread's time on the CPU and waiting for one come from the kernel's
`/proc/self/task/TID/schedstat`; what is left of a round is the time it blocked."""

from __future__ import annotations

import math
import os
import sys
from types import FrameType
from typing import Any, Callable, Optional

# (rank, local rank, world size) variables, by launcher, in the order they are trusted
RANK_KEYS = (
    ("RANK", "LOCAL_RANK", "WORLD_SIZE"),  # torchrun, accelerate launch, deepspeed, torch.distributed.launch
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"),  # mpirun (Open MPI)
    ("PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE"),  # MPICH, Intel MPI
    ("SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"),  # srun
)
JOB_KEYS = ("GPUTRIAGE_JOB_ID", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "PMIX_NAMESPACE", "LSB_JOBID", "PBS_JOBID")
BINS_PER_OCTAVE = 4  # step durations in bins 2^(1/4) wide (19%), from 1 ms
STEP_BINS = 4 * 21  # up to 2^21 ms (35 min)
STACK_FRAMES = 12  # frames of the main thread's stack a report carries
LOOP_JUMPS = 3  # backward jumps that make a frame of the workload's code its main loop


def identity(environ: Any) -> Optional[dict[str, Any]]:
    """This process's rank in its job, from the launcher's variables; None for a process that is no rank."""
    for rank_key, local_key, size_key in RANK_KEYS:
        try:
            rank = int(environ[rank_key])
        except (KeyError, ValueError):
            continue
        out: dict[str, Any] = {"rank": rank, "source": rank_key}
        for name, key in (("local_rank", local_key), ("world_size", size_key)):
            try:
                out[name] = int(environ[key])
            except (KeyError, ValueError):
                pass
        job = next((str(environ[k]) for k in JOB_KEYS if environ.get(k)), None)
        if job is not None:
            out["job_id"] = job
        return out
    return None


def step_bin(seconds: float) -> int:
    """The histogram bin of a step's duration."""
    ms = seconds * 1000.0
    return 0 if ms <= 1.0 else min(STEP_BINS - 1, int(BINS_PER_OCTAVE * math.log2(ms)))


def _schedstat(fd: int) -> Optional[tuple[int, int]]:
    """(ns on a CPU, ns waiting for one) of a thread, since it started."""
    try:
        on, wait = os.pread(fd, 96, 0).split()[:2]
        return int(on), int(wait)
    except (OSError, ValueError):
        return None


class RankClock:
    """Kept by the stack sampler of a rank: `tick` at each sampling round (the main thread's leaf frame and
    category), `report` at each write."""

    def __init__(self, who: dict[str, Any], main_ident: int, main_native_id: Optional[int], kind: Callable[[str], int]):
        self.who, self.main_ident, self.kind = who, main_ident, kind
        self.fd: Optional[int] = None
        try:
            self.fd = os.open(f"/proc/self/task/{main_native_id}/schedstat", os.O_RDONLY)
        except (OSError, TypeError):
            pass
        first = _schedstat(self.fd) if self.fd is not None else None
        self.start_ns = first or (0, 0)
        self.last_ns: Optional[tuple[int, int]] = first
        self.last_t: Optional[float] = None
        self.hist = [0.0] * STEP_BINS
        self.steps = 0.0
        self.source: Optional[str] = None  # "gputriage.step" or "main loop"
        self.counted: Optional[float] = None  # the workload's step counter when last read
        self.counted_t: Optional[float] = None
        self.now: Optional[int] = None  # the main thread's category, since `since_t`
        self.since_t = 0.0
        self.loop: Optional[FrameType] = None  # the frame of its main loop, once found
        self.loop_t: Optional[float] = None
        self.jumps: dict[Any, int] = {}  # backward jumps per code object of the workload's own
        self.seen: list[tuple[FrameType, int]] = []  # the workload's frames at the last round, and their lines
        self.split: tuple[tuple[int, ...], int] = ((), -1)  # (computing categories, the collective wait's)

    def blocked(self, t: float) -> Optional[float]:
        """The share of the time since the last round the main thread was neither on a CPU nor waiting for one."""
        now = _schedstat(self.fd) if self.fd is not None else None
        last, last_t = self.last_ns, self.last_t
        self.last_ns, self.last_t = now, t
        if now is None or last is None or last_t is None or t <= last_t:
            return None
        ran_s = (now[0] - last[0] + now[1] - last[1]) / 1e9
        return min(1.0, max(0.0, 1.0 - ran_s / (t - last_t)))

    def count(self, t: float, frame: FrameType, got: tuple[int, Any, bool], counts: Any, distributed: bool) -> None:
        """The main thread's round, counted in the sampler's `counts`: in a data-parallel backward, the time it
        blocked since the last round is its gradients' collectives waiting for its peers (the reducer waits there);
        its steps and where it is now."""
        (computing, collective), (cat, line, loader) = self.split, got
        blocked = self.blocked(t) if distributed else None  # the kernel's counters: read once a process group is up
        if blocked and cat in computing and in_backward(frame):
            counts.add(collective, line, True, False, blocked)
            counts.add(cat, line, True, loader, 1.0 - blocked)
            cat = collective if blocked >= 0.5 else cat
        else:
            counts.add(cat, line, True, loader)
        self.tick(t, frame, cat)

    def tick(self, t: float, frame: Optional[FrameType], category: int) -> None:
        """One round: where the main thread is, and the steps it made."""
        if category != self.now:
            self.now, self.since_t = category, t
        if self._counter_steps(t) or frame is None:
            return
        self._loop_steps(t, frame)

    def _add(self, seconds: float, steps: float) -> None:
        self.hist[step_bin(seconds / steps)] += steps
        self.steps += steps

    def _counter_steps(self, t: float) -> bool:
        """Steps from the workload's `gputriage.step()` counter, where it reports them."""
        progress = sys.modules.get("gputriage.inworkload.progress")
        view = getattr(progress, "_view", None)
        if view is None or getattr(progress, "_pid", -1) != os.getpid():
            return False
        n = float(view[0])
        if self.counted is not None and self.counted_t is not None and n > self.counted:
            self._add(t - self.counted_t, n - self.counted)
        if self.counted is None or n > self.counted:
            self.counted, self.counted_t = n, t
        self.source = "gputriage.step"
        return True

    def _loop_steps(self, t: float, frame: FrameType) -> None:
        """An iteration of the main loop: the line of its frame jumped back since the last round."""
        own: list[FrameType] = []
        f: Optional[FrameType] = frame
        while f is not None and len(own) < 64:
            if self.kind(f.f_code.co_filename) == 0:  # the workload's own code (stack_classify.USER)
                own.append(f)
            f = f.f_back
        before = {id(x): line for x, line in self.seen}
        self.seen = [(x, x.f_lineno) for x in own]
        for x in reversed(own):  # outermost first
            last = before.get(id(x))
            if last is None or x.f_lineno >= last:
                continue
            if x is self.loop:
                if self.loop_t is not None:
                    self._add(t - self.loop_t, 1.0)
                self.loop_t, self.source = t, "main loop"
                return
            self.jumps[x.f_code] = self.jumps.get(x.f_code, 0) + 1
            if self.jumps[x.f_code] >= LOOP_JUMPS and (self.loop is None or self.loop not in own):
                self.loop, self.loop_t = x, t  # the outermost frame that loops (a new one once the last returned)
                return

    def report(self, t: float, frames: dict[int, FrameType], categories: tuple[str, ...]) -> dict[str, Any]:
        """What the stack sampler's report adds for a rank."""
        now = _schedstat(self.fd) if self.fd is not None else None
        out: dict[str, Any] = {"rank": self.who}
        if now is not None:
            out["main_runq_s"] = (now[1] - self.start_ns[1]) / 1e9
        if self.source is not None:
            out["steps"] = {"source": self.source, "total": self.steps, "hist": [round(x, 3) for x in self.hist]}
        if self.now is not None:
            out["now"] = [categories[self.now], self.since_t, stack(frames.get(self.main_ident))]
        return out

    def close(self) -> None:
        self.loop, self.seen = None, []
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def distributed_ready() -> bool:
    """torch.distributed has a process group in this process (torch imported whole, never while it imports)."""
    torch = sys.modules.get("torch")
    dist = sys.modules.get("torch.distributed")
    try:
        return not getattr(torch.__spec__, "_initializing", True) and bool(dist.is_initialized())  # type: ignore
    except Exception:  # no torch.distributed, or one without a process group
        return False


def in_backward(frame: FrameType) -> bool:
    """The thread is inside autograd's backward (in a data-parallel job, where its gradients' collectives wait)."""
    return "/torch/autograd/" in frame.f_code.co_filename.replace(os.sep, "/")


def stack(frame: Optional[FrameType]) -> list[list[Any]]:
    """A thread's stack as [file, line, function], innermost first: its innermost frame, then those outside the
    standard library (`STACK_FRAMES` at most)."""
    out: list[list[Any]] = []
    stdlib = os.path.dirname(os.path.abspath(os.__file__)) + os.sep
    f = frame
    while f is not None and len(out) < STACK_FRAMES:
        path = f.f_code.co_filename
        if not out or (not (path.startswith(stdlib) and "-packages" not in path) and not path.startswith("<frozen")):
            out.append([path, f.f_lineno, f.f_code.co_name])
        f = f.f_back
    return out
