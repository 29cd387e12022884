"""A run's allocator snapshot in the terminal (`RunReport.memory`): the out-of-memory error the workload raised and
the cause the memory judge named, or the growth it saw, with the top live allocations by Python line."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from gputriage.model.memory import MemoryReport
from gputriage.model.run import RunReport
from gputriage.model.safe_text import NAME_CHARS, safe_text
from gputriage.report.memory_terminal import error_line, figures, render_lines
from gputriage.report.style import hanging

TOP_LINES = 5


def heading(m: MemoryReport) -> str:
    """What the snapshot is of."""
    at = "at the out-of-memory error" if m.state.oom is not None else "while its live memory grew"
    return f"GPU memory {at} (the allocator's snapshot)"


def render_memory(r: RunReport, console: Console) -> None:
    m = r.memory
    if m is None:
        return
    s = m.state
    console.print(Text(f"\n{heading(m)}", style="bold"))
    console.print(Text(figures(s), style="dim"))
    if s.oom is not None:
        console.print(Text(error_line(s)))
        cause = Text("cause: ", style="bold")
        cause.append(m.cause or "none named", style="bold magenta")
        console.print(cause)
        console.print(hanging("", m.summary, style="dim"))
    grew = any(f.id == "run.vram_growing" and "lines_grown" in f.evidence for f in r.findings)
    render_lines(m, console, TOP_LINES, grew=grew)
    console.print(Text(f"snapshot: {safe_text(m.source, NAME_CHARS)} (gputriage memory FILE: every line)", style="dim"))
    for note in m.notes:
        console.print(Text(f"note: {note}", style="dim"))
