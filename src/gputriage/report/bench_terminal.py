"""`bench` in the terminal: measured vs datasheet, the healthy band, conditions, change since last."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gputriage.model.bench import BenchReport, BenchResult
from gputriage.report.style import finding_text

WIDE = 100  # narrower terminals get the conditions summarized under the table, not in columns


def _share(r: BenchResult) -> tuple[str, str]:
    pct = r.pct_of_reference
    low = r.band[0] if r.band else None
    text = f"{pct:.0f}%" if pct is not None else ""
    if low is not None:
        text += f" (≥{100 * low:.0f})"
    return text, "red" if low is not None and pct is not None and pct / 100 < low else ""


def _ranges(report: BenchReport) -> str:
    parts = []
    for key, unit in (("sm_clock_mhz", "MHz SM clock"), ("power_w", "W"), ("temperature_c", "C")):
        vals = [r.conditions[key] for r in report.results if r.conditions.get(key) is not None]
        if vals:
            lo, hi = min(vals), max(vals)
            parts.append(f"{lo:.0f}–{hi:.0f} {unit}" if round(lo) != round(hi) else f"{lo:.0f} {unit}")
    return ", ".join(parts)


def render(report: BenchReport, console: Console) -> None:
    header = f"gputriage bench{' --quick' if report.quick else ''}: {report.gpu or 'no GPU'}"
    if report.spec:
        header += f" against the {report.spec} datasheet"
        if report.spec_matched_by and report.spec_matched_by != "pci id":
            header += f" (matched by {report.spec_matched_by})"
    elif report.gpu:
        header += " (no datasheet entry)"
    console.print(Text(header, style="bold"))
    wide = console.width >= WIDE
    t = Table(header_style="bold", box=None, pad_edge=False)
    cols = ["probe", "measured", "datasheet", "% (healthy)"] + (["SM MHz", "W", "C"] if wide else []) + ["vs last"]
    for col in cols:
        t.add_column(col, justify="left" if col == "probe" else "right", no_wrap=True)
    reasons: dict[str, list[str]] = {}
    for r in report.results:
        share, style = _share(r)
        c = r.conditions
        reference = f"{r.reference:g}" if r.reference else ""
        row: list[str | Text] = [r.name, Text(f"{r.value:g} {r.unit}", style=style), reference, share]
        if wide:
            row += [
                f"{c['sm_clock_mhz']:.0f}" if c.get("sm_clock_mhz") else "",
                f"{c['power_w']:.0f}" if c.get("power_w") else "",
                f"{c['temperature_c']:.0f}" if c.get("temperature_c") else "",
            ]
        row.append(f"{r.change_pct:+.1f}%" if r.change_pct is not None else "")
        t.add_row(*row)
        for why in c.get("clock_event_reasons") or []:
            reasons.setdefault(why, []).append(r.name)
    console.print(t)
    if not wide and _ranges(report):
        console.print(Text(f"  conditions during the GPU probes: {_ranges(report)}", style="dim"))
    for why, probes in reasons.items():
        console.print(Text(f"  clock held by {why} during: {', '.join(probes)}", style="dim"))
    for e in report.errors:
        console.print(Text(f"  {e.probe}: not measured — {e.error}", style="yellow"))
    for f in report.findings:
        console.print(finding_text(f))
