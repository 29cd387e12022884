"""A checklist in the terminal: each item's status, why, and the command that decided it."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from gputriage.model.checklist import ChecklistReport, Status
from gputriage.report.style import hanging

MARK = {
    Status.passed: ("PASS", "green"),
    Status.failed: ("FAIL", "red"),
    Status.unknown: (" ?? ", "yellow"),
    Status.question: ("ASK ", "cyan"),
}


def render(r: ChecklistReport, console: Console) -> None:
    console.print(Text(f"checklist: {r.kind}", style="bold"))
    for item in r.items:
        mark, style = MARK[item.status]
        console.print(hanging(f"{mark} ", f"{item.step}. {item.text}", mark_style=f"bold {style}"))
        why = item.why + (f"  [{item.decided_by}]" if item.decided_by else "")
        console.print(hanging(" " * (len(mark) + 1 + len(f"{item.step}. ")), why, style="dim"))
    counts = {s: sum(1 for i in r.items if i.status == s) for s in Status}
    console.print(Text(", ".join(f"{n} {s.value}" for s, n in counts.items() if n), style="bold"))
