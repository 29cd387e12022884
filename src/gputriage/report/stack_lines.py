"""The workload's Python lines as the reports say them (terminal, HTML, `monitor()`): where the steady time went,
from the stack sampler (`RunReport.stacks`, a host-side verdict's `lines`)."""

from __future__ import annotations

import os

from gputriage.inworkload.stack_categories import doing
from gputriage.model.run import HostLine, HostStacks


def place(x: HostLine, cwd: str = "") -> str:
    """`file:line function`, the file relative to the run's directory when it lies under it."""
    path = x.file
    if cwd and path.startswith(cwd.rstrip(os.sep) + os.sep):
        path = path[len(cwd.rstrip(os.sep)) + 1 :]
    if x.inferred:
        return f"{path}, {x.function}, between its waits (no sample caught the line)"
    return f"{path}:{x.line} {x.function}" if x.line else path.strip("<>")


def thread(x: HostLine) -> str:
    return "main thread" if x.main else "another thread"


def main_thread(s: HostStacks) -> str:
    """The main thread's time in a sentence: "waits for input 65%, computes on the host 34%"."""
    parts = [f"{doing(c)} {v:.0%}" for c, v in sorted(s.main_shares.items(), key=lambda kv: -kv[1]) if v >= 0.01]
    return ", ".join(parts) or "no sample"


def about(s: HostStacks) -> str:
    """What the shares rest on."""
    cpu = f"on the CPU {s.main_cpu_pct:.0f}% of the time; " if s.main_cpu_pct is not None else ""
    beside = f"; other Python threads at work: {s.others_busy:.1f} on average" if s.others_busy else ""
    return f"{cpu}{s.samples:.0f} samples over {s.span_s:.0f} s of steady state{beside}"


def line_text(x: HostLine, cwd: str = "") -> str:
    """One line with its share: "65% queue_lists_loop.py:27 main (waits for input)"."""
    return f"{x.share:.0%} {place(x, cwd)} ({doing(x.category)}" + ("" if x.main else ", another thread") + ")"
