"""`baseline` and `diff` in the terminal: each figure's median and spread, the change and whether it is
outside the noise, the verdicts, and what changed in the environment."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gputriage.model.baseline import Baseline, Diff
from gputriage.report.style import figure_text

_fig = figure_text


def verdicts(d: Diff) -> str:
    """The two sides' verdicts in words: one when they agree, A → B when not ("none" where a side has none: no GPU
    sampled, or a run that failed before a steady state)."""
    if d.verdict_a == d.verdict_b:
        return d.verdict_a or "none on either side"
    return f"{d.verdict_a or 'none'} → {d.verdict_b or 'none'}"


def render_baseline(b: Baseline, console: Console | None = None) -> None:
    console = console or Console()
    console.print(Text(f"baseline {b.name}: runs {', '.join(map(str, b.runs))}", style="bold"))
    t = Table(box=None, header_style="bold", pad_edge=False)
    t.add_column("figure")
    t.add_column("median (spread)", justify="right")
    for k, f in sorted(b.figures.items()):
        t.add_row(k, _fig(f))
    console.print(t)
    console.print(Text("verdicts: " + (", ".join(f"{k} ×{n}" for k, n in b.verdicts.items()) or "none"), style="dim"))
    console.print(Text("environment: " + "; ".join(f"{k}: {v}" for k, v in b.fingerprint.items()), style="dim"))


def render_diff(d: Diff, console: Console | None = None) -> None:
    console = console or Console()
    console.print(Text(f"{d.a}  →  {d.b}", style="bold"))
    t = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("figure", "A", "B", "change", "noise", ""):
        t.add_column(col, justify="left" if col in ("figure", "") else "right")
    unknown = False
    for c in d.changes:
        if c.called is None:
            unknown = unknown or c.change_pct is not None
            call = Text("")
        elif c.called:
            call = Text(
                "worse" if c.better is False else "better" if c.better else "changed",
                style="red" if c.better is False else "green" if c.better else "yellow",
            )
        else:
            call = Text("within noise", style="dim")
        t.add_row(
            c.figure,
            _fig(c.a),
            _fig(c.b),
            f"{c.change_pct:+.1f}%" if c.change_pct is not None else "",
            f"±{c.noise_pct:.1f}%" if c.noise_pct is not None else "",
            call,
        )
    console.print(t)
    if unknown:
        console.print(
            Text(
                "one run on each side: the noise is unknown and no change is called (a baseline of "
                "several runs measures it)",
                style="yellow",
            )
        )
    console.print(Text(f"verdict: {verdicts(d)}", style="bold magenta" if d.verdict_a != d.verdict_b else "dim"))
    if d.environment:
        console.print(Text("environment changed:", style="bold yellow"))
        for e in d.environment:
            console.print(Text(f"  {e.key}: {e.a} → {e.b}", style="yellow"))
    else:
        console.print(Text("environment: the same", style="dim"))
