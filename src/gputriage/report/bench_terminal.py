"""`bench` in the terminal: measured vs datasheet, the healthy band, conditions, change since last."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gputriage.model.bench import BenchReport
from gputriage.report.style import finding_text


def render(report: BenchReport, console: Console) -> None:
    header = f"gputriage bench{' --quick' if report.quick else ''}: {report.gpu or 'no GPU'}"
    if report.spec:
        header += f" against the {report.spec} datasheet"
    elif report.gpu:
        header += " (no datasheet entry)"
    console.print(Text(header, style="bold"))
    t = Table(header_style="bold", box=None, pad_edge=False)
    for col in ("probe", "measured", "datasheet", "%", "healthy", "SM MHz", "W", "C", "vs last"):
        t.add_column(col, justify="left" if col == "probe" else "right", no_wrap=True)
    reasons: dict[str, list[str]] = {}
    for r in report.results:
        pct = r.pct_of_reference
        low = r.band[0] if r.band else None
        style = "red" if low is not None and pct is not None and pct / 100 < low else ""
        c = r.conditions
        t.add_row(r.name, Text(f"{r.value:g} {r.unit}", style=style), f"{r.reference:g}" if r.reference else "",
                  f"{pct:.0f}%" if pct is not None else "", f"≥{100 * low:.0f}%" if low is not None else "",
                  f"{c['sm_clock_mhz']:.0f}" if c.get("sm_clock_mhz") else "",
                  f"{c['power_w']:.0f}" if c.get("power_w") else "",
                  f"{c['temperature_c']:.0f}" if c.get("temperature_c") else "",
                  f"{r.change_pct:+.1f}%" if r.change_pct is not None else "")
        for why in c.get("clock_event_reasons") or []:
            reasons.setdefault(why, []).append(r.name)
    console.print(t)
    for why, probes in reasons.items():
        console.print(Text(f"  clock held by {why} during: {', '.join(probes)}", style="dim"))
    for e in report.errors:
        console.print(Text(f"  {e.probe}: not measured — {e.error}", style="yellow"))
    for f in report.findings:
        console.print(finding_text(f))
