"""The ranks of a distributed job among processes gputriage did not start (`watch`, the exporter), from py-spy's
dumps: who each is (its launcher's variables in `/proc/PID/environ`, read as the stack sampler reads its own), and
where its main thread has been since when — classified by the stack sampler's rules, a process group assumed (a
`work.wait()` is a collective's), a main thread off the CPU inside autograd's backward waiting in its gradients'
collectives. What `diagnosis.run.hang.HangWatch` reads to say a hang."""

from __future__ import annotations

import os
from typing import Any, Callable, Optional, cast

from gputriage.backends import rank_process
from gputriage.inworkload import rank_clock
from gputriage.inworkload.stack_categories import CATEGORIES, COLLECTIVE_WAIT
from gputriage.inworkload.stack_classify import Classifier
from gputriage.inworkload.stack_libraries import OnGpu
from gputriage.model.sample import RankNow, RankSample
from gputriage.sampling.pyspy import as_frames

STDLIB = os.path.dirname(os.path.abspath(os.__file__)) + os.sep


def main_thread(threads: list[Any], pid: int) -> Optional[dict[str, Any]]:
    """The process's main thread in a dump (its thread id is the process's), else the first."""
    listed = [t for t in threads if isinstance(t, dict)]
    return next((t for t in listed if t.get("os_thread_id") == pid), listed[0] if listed else None)


def stack_of(frames: list[Any]) -> list[str]:
    """A dump's frames as "file:line function", innermost first: the innermost, then those outside the standard
    library (as `rank_clock.stack`)."""
    out: list[str] = []
    for f in frames:
        if not isinstance(f, dict) or len(out) >= rank_clock.STACK_FRAMES:
            continue
        path = str(f.get("filename") or "?")
        if out and "/lib/python3" in path and "-packages" not in path:
            continue
        out.append(f"{path}:{f.get('line')} {str(f.get('name') or '?').rsplit('.', 1)[-1]}")
    return out


class PySpyRanks:
    """Fed each dump (`add`); `ranks()`: each rank's main thread now, since when."""

    def __init__(self, environ: Callable[[int], Optional[dict[str, str]]] = rank_process.environ) -> None:
        self.environ = environ
        self.classifier = Classifier(OnGpu(assume=True))  # processes on the GPUs
        self.classifier.distributed = True
        self.who: dict[int, Optional[dict[str, Any]]] = {}
        self.now: dict[int, RankNow] = {}

    def identity(self, pid: int) -> Optional[dict[str, Any]]:
        """The process's rank (None: none), read once."""
        if pid not in self.who:
            env = self.environ(pid)
            self.who[pid] = rank_clock.identity(env) if env is not None else None
        return self.who[pid]

    def add(self, pid: int, t_s: float, threads: list[Any]) -> None:
        """One dump of a process (a process that is no rank is left out)."""
        if self.identity(pid) is None:
            return
        main = main_thread(threads, pid)
        frame = as_frames(main.get("frames") or []) if main is not None else None
        if main is None or frame is None:
            return
        cat = CATEGORIES[self.classifier.classify(cast(Any, frame), True)[0]]
        if main.get("active") is False and rank_clock.in_backward(cast(Any, frame)):
            cat = COLLECTIVE_WAIT  # blocked in a backward: the reducer waits for its peers
        before = self.now.get(pid)
        since = before.since_s if before is not None and before.category == cat else t_s
        self.now[pid] = RankNow(category=cat, since_s=since, stack=stack_of(main.get("frames") or []))

    def forget(self, alive: set[int]) -> None:
        """Drop the processes no longer seen."""
        for pid in set(self.now) - alive:
            del self.now[pid]

    def ranks(self) -> list[RankSample]:
        out = []
        for pid, now in sorted(self.now.items()):
            who = self.who.get(pid) or {}
            out.append(
                RankSample(
                    rank=int(who.get("rank", -1)),
                    pid=pid,
                    local_rank=who.get("local_rank"),
                    world_size=who.get("world_size"),
                    job_id=who.get("job_id"),
                    source=str(who.get("source", "RANK")),
                    now=now,
                )
            )
        return out
