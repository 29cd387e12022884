"""The Python stacks of the processes on the GPUs, on demand (the exporter's `/stacks`): one py-spy dump of each,
classified as `watch` classifies its dumps (`sampling.pyspy`). Never on a scrape: a dump pauses its process for the
few milliseconds py-spy reads it. Whether py-spy can read a process here at all is checked once, at the start
(`gputriage_pyspy_available`)."""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future
from typing import Callable, Generic, TypeVar

from gputriage.backends import pyspy
from gputriage.model.pyspy import PySpyStacks
from gputriage.model.reading import Reading, Unavailable
from gputriage.sampling.pyspy import PySpySampler

Dump = Callable[[int], Reading]  # a process's threads as py-spy dumps them, or why not
T = TypeVar("T")


def availability(dump: Dump = pyspy.dump) -> Unavailable | None:
    """Why py-spy cannot read the processes on the GPUs here (None: it can): not installed, or not permitted to read
    this process — one py-spy did not start, as the processes on the GPUs are not (ptrace_scope 1 lets a process
    read only what it started)."""
    missing = pyspy.missing(dump)
    if missing is not None:
        return missing
    got = dump(os.getpid())
    return got if isinstance(got, Unavailable) else None


def dump_stacks(pids: list[int], dump: Dump = pyspy.dump) -> PySpyStacks:
    """One dump of each process now (`every_s` 0: on demand), or why there is none: py-spy not installed, not
    permitted (with what would permit it), a process that is not Python, no process on the GPUs."""
    missing = pyspy.missing(dump)
    if missing is not None:
        return PySpyStacks(available=False, why=missing.detail)
    sampler = PySpySampler(lambda: pids, every_s=0.0, dump=dump)
    sampler.sample_once()
    out = sampler.stop()
    if not pids:
        out.why = "no process holds a GPU now"
    return out


class SharedRound(Generic[T]):
    """`fn` called once at a time; who calls while it runs waits for that call's result (or its exception) instead
    of starting another."""

    def __init__(self, fn: Callable[[], T]) -> None:
        self.fn = fn
        self.waiting = 0  # callers waiting on another's call now
        self._lock = threading.Lock()
        self._pending: Future[T] | None = None

    def __call__(self) -> T:
        with self._lock:
            pending, mine = self._pending, self._pending is None
            if pending is None:
                pending = self._pending = Future()
            else:
                self.waiting += 1
        if not mine:
            try:
                return pending.result()
            finally:
                with self._lock:
                    self.waiting -= 1
        try:
            result = self.fn()
        except BaseException as exc:
            self._done()
            pending.set_exception(exc)  # to those who waited; raised here too
            raise
        self._done()
        pending.set_result(result)
        return result

    def _done(self) -> None:
        """No round under way from now: a caller arriving after this starts its own (before the waiters are
        answered, so none joins a round already over)."""
        with self._lock:
            self._pending = None
