"""The Python stacks of the processes on the GPUs, on demand (the exporter's `/stacks`): one py-spy dump of each,
classified as `watch` classifies its dumps (`sampling.pyspy`). Never on a scrape: a dump pauses its process for the
few milliseconds py-spy reads it. Whether py-spy can read a process here at all is checked once, at the start
(`gputriage_pyspy_available`)."""

from __future__ import annotations

import os
from typing import Callable

from gputriage.backends import pyspy
from gputriage.model.pyspy import PySpyStacks
from gputriage.model.reading import Reading, Unavailable
from gputriage.sampling.pyspy import PySpySampler

Dump = Callable[[int], Reading]  # a process's threads as py-spy dumps them, or why not


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
