"""`memory` in the terminal: the allocator's figures, the error and its verdict, the top live allocations by Python
line, the lines that grew, the processes on the GPU, the findings."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gputriage.model.memory import MemoryLine, MemoryReport, MemoryState, short_label, size_text
from gputriage.model.safe_text import NAME_CHARS, safe_text
from gputriage.report.style import finding_text, hanging

PHASE = {
    "forward": "forward",
    "backward": "backward",
    "optimizer_first_step": "the optimizer's first step",
    "optimizer": "the optimizer's step",
    "other": "code outside a module's forward, backward or an optimizer",
}


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def figures(s: MemoryState) -> str:
    """One line of the allocator's figures."""
    parts = [
        f"GPU {s.device}: {size_text(s.allocated_bytes)} live in {size_text(s.reserved_bytes)} reserved "
        f"(allocated / reserved {_pct(s.allocated_share)})",
        f"cache free {size_text(s.cached_free_bytes)}, largest block {size_text(s.largest_free_bytes)}, "
        f"fragmentation {_pct(s.fragmentation)}",
        f"{s.segments} segments, {s.blocks} blocks",
    ]
    if s.expandable_segments:
        parts.append("expandable segments")
    return " · ".join(parts)


def error_line(s: MemoryState) -> str:
    oom = s.oom
    if oom is None:
        return ""
    where = short_label(*_split(oom.line)) if oom.line else "a line the stack does not show"
    said = f"out of memory: {size_text(oom.requested_bytes)} asked at {where}"
    if oom.function:
        said += f" ({safe_text(oom.function, NAME_CHARS)})"
    if oom.phase:
        said += f", in {PHASE.get(oom.phase, oom.phase)}"
    if oom.device_free_bytes is not None:
        said += f"; {size_text(oom.device_free_bytes)} free on the device"
    if oom.capacity_bytes:
        said += f" of {size_text(oom.capacity_bytes)}"
    return said


def seconds(s: float) -> str:
    return f"{s:,.1f} s" if s >= 1 else f"{s * 1000:,.0f} ms"


def lines_table(lines: list[MemoryLine], growth: bool = False) -> Table:
    t = Table(box=None, pad_edge=False)
    t.add_column("line", overflow="fold")
    t.add_column("function", overflow="fold")
    t.add_column("live", justify="right")
    t.add_column("blocks", justify="right")
    if growth:
        t.add_column("grown", justify="right")
    for ln in lines:
        where = short_label(safe_text(ln.file, NAME_CHARS), ln.line)
        if ln.via:
            where += f" (via {short_label(*_split(ln.via))})"
        row = [where, safe_text(ln.function, NAME_CHARS), size_text(ln.bytes), str(ln.blocks)]
        if growth:
            row.append(size_text(ln.growth_bytes) if ln.growth_bytes else "")
        t.add_row(*row)
    return t


def _split(label: str) -> tuple[str, int]:
    file, _, line = safe_text(label, NAME_CHARS).rpartition(":")
    return (file, int(line)) if line.isdigit() else (label, 0)


def render_lines(report: MemoryReport, console: Console, top: int = 10, grew: bool | None = None) -> None:
    """The top live allocations by Python line, and the lines whose live bytes grew where they grew (`grew`: where
    another finding than the report's says so)."""
    s = report.state
    grew = grew or any(f.id == "memory.growing" for f in report.findings)
    if s.top_lines and top:
        console.print(Text("\nTop live allocations by Python line", style="bold"))
        console.print(lines_table(s.top_lines[:top], growth=grew))
    if s.growth_lines and grew:
        g = s.growth
        head = "\nLines whose live bytes grew"
        if g is not None:
            head += f" (troughs rose {size_text(g.grown_bytes)} over {seconds(g.span_s)}, from the {g.source})"
        console.print(Text(head, style="bold"))
        console.print(lines_table(s.growth_lines[:top], growth=True))


def render(report: MemoryReport, console: Console, top: int = 10) -> None:
    s = report.state
    console.print(Text(f"memory: {safe_text(report.source, NAME_CHARS)}", style="bold"))
    console.print(Text(figures(s), style="dim"))
    if s.oom is not None:
        console.print(Text(error_line(s)))
    verdict = Text("verdict: ", style="bold")
    verdict.append(report.cause or ("none named" if s.oom else "no out-of-memory error"), style="bold magenta")
    console.print(verdict)
    console.print(hanging("", report.summary, style="dim"))
    render_lines(report, console, top)
    if s.processes:
        console.print(Text("\nProcesses on the GPU at the error (NVML)", style="bold"))
        t = Table(box=None, pad_edge=False)
        for col in ("pid", "used", "", "who"):
            t.add_column(col, justify="right" if col in ("pid", "used") else "left")
        for p in sorted(s.processes, key=lambda p: -(p.used_bytes or 0)):
            who = " ".join(safe_text(x, NAME_CHARS) for x in (p.name, p.owner) if x)
            t.add_row(str(p.pid), size_text(p.used_bytes), "this job" if p.own else "another", who)
        console.print(t)
    if report.findings:
        console.print()
        for f in report.findings:
            console.print(finding_text(f))
    for note in report.notes:
        console.print(Text(f"note: {note}", style="dim"))
