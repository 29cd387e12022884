"""A bench in the HTML report: each measured ceiling as a share of the datasheet's, the healthy band
shaded, the conditions it ran under, the change since the last bench, the findings."""

from __future__ import annotations

from gputriage.model.bench import BenchReport
from gputriage.report.html_page import Page, bar, esc, findings_html, table


def bench_html(b: BenchReport) -> str:
    rows = []
    for r in b.results:
        c = r.conditions
        low = r.band[0] if r.band else None
        below = low is not None and r.pct_of_reference is not None and r.pct_of_reference / 100 < low
        rows.append(
            (
                r.name,
                f"{r.value:,.4g} {r.unit}",
                f"{r.reference:,.4g}" if r.reference else "",
                f"{r.pct_of_reference:.0f}%" if r.pct_of_reference is not None else "",
                bar(
                    r.pct_of_reference,
                    "#c0392b" if below else "#3b7dd8",
                    band=[100 * x for x in r.band] if r.band else None,
                    scale_pct=110,
                ),
                f"{c['sm_clock_mhz']:.0f}" if c.get("sm_clock_mhz") else "",
                f"{c['power_w']:.0f}" if c.get("power_w") else "",
                f"{c['temperature_c']:.0f}" if c.get("temperature_c") else "",
                f"{r.change_pct:+.1f}%" if r.change_pct is not None else "",
            )
        )
    out = [
        table(
            (
                "probe",
                "measured",
                "datasheet",
                "% of it",
                "against the datasheet (band: healthy)",
                "SM MHz",
                "W",
                "°C",
                "vs last",
            ),
            rows,
            numeric=(1, 2, 3, 5, 6, 7, 8),
        )
    ]
    out += [f'<p class="worse">{esc(e.probe)}: not measured — {esc(e.error)}</p>' for e in b.errors]
    if b.other_processes:
        out.append(
            f'<p class="muted">Other processes on the GPU while it ran: '
            f"{esc(', '.join(f'pid {p.pid} (GPU {p.gpu})' for p in b.other_processes))}</p>"
        )
    return "".join(out)


def bench_page(b: BenchReport) -> Page:
    sub = f"against the {b.spec} datasheet" if b.spec else "no datasheet entry for this GPU"
    if b.spec_matched_by and b.spec_matched_by != "pci id":
        sub += f" (matched by {b.spec_matched_by})"
    page = Page(f"Bench{' --quick' if b.quick else ''}: {b.gpu or 'no GPU'}", sub)
    page.section("Measured ceilings against the datasheet", bench_html(b))
    page.section("Findings", findings_html(b.findings))
    return page
