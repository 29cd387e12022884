"""`watch`'s summary: where the Python processes holding a GPU spent their time, from py-spy, or why py-spy could
not say (not installed, not permitted)."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from gputriage.inworkload.stack_categories import doing
from gputriage.model.pyspy import PySpyStacks
from gputriage.model.safe_text import safe_text
from gputriage.report.stack_lines import line_text


def render_pyspy(s: PySpyStacks, console: Console, cwd: str = "") -> None:
    if not s.available or not s.dumps:
        console.print(Text(f"python stacks (py-spy): none: {safe_text(s.why, 400)}", style="dim"))
        return
    shares = ", ".join(
        f"{doing(c)} {v:.0%}" for c, v in sorted(s.main_shares.items(), key=lambda kv: -kv[1]) if v >= 0.01
    )
    pids = ", ".join(str(p) for p in s.processes)
    plural = "es" if len(s.processes) != 1 else ""
    console.print(
        Text(
            f"python stacks (py-spy, {s.dumps} dump{'s' if s.dumps != 1 else ''} of process{plural} {pids}, "
            f"one every {s.every_s:g} s): the main thread {shares or 'not seen'}",
            style="dim",
        )
    )
    for x in s.lines:
        console.print(Text("  " + line_text(x, cwd), style="dim"))
    for pid, why in sorted(s.failed.items()):
        console.print(Text(f"  process {pid}: {safe_text(why, 300)}", style="dim"))
