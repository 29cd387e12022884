"""`bench` in the terminal: measured vs datasheet, the healthy band, conditions, change since last."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gputriage.model.finding import Finding
from gputriage.model.probe import ProbeResult
from gputriage.report.style import finding_text


def render(results: list[ProbeResult], bands: dict[str, Any], changes: dict[str, float], errors: list[dict[str, Any]],
           findings: list[Finding], header: str, console: Console) -> None:
    console.print(Text(header, style="bold"))
    t = Table(header_style="bold", box=None, pad_edge=False)
    for col in ("probe", "measured", "datasheet", "%", "healthy", "SM MHz", "W", "C", "reasons", "vs last"):
        t.add_column(col, justify="left" if col in ("probe", "reasons") else "right", no_wrap=True)
    for r in results:
        pct = r.pct_of_reference
        b = bands.get(r.name)
        style = "red" if b and pct is not None and pct / 100 < b[0] else ""
        c = r.conditions
        t.add_row(r.name, Text(f"{r.value:g} {r.unit}", style=style), f"{r.reference:g}" if r.reference else "",
                  f"{pct:.0f}%" if pct is not None else "", f"≥{100 * b[0]:.0f}%" if b else "",
                  f"{c['sm_clock_mhz']:.0f}" if c.get("sm_clock_mhz") else "",
                  f"{c['power_w']:.0f}" if c.get("power_w") else "",
                  f"{c['temperature_c']:.0f}" if c.get("temperature_c") else "",
                  ",".join(c.get("clock_event_reasons", [])), f"{changes[r.name]:+.1f}%" if r.name in changes else "")
    console.print(t)
    for e in errors:
        console.print(Text(f"  {e['probe']}: not measured — {e['error']}", style="yellow"))
    for f in findings:
        console.print(finding_text(f))
