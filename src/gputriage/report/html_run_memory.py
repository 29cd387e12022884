"""A run's allocator snapshot on its HTML page (`RunReport.memory`): the out-of-memory error and the cause the memory
judge named, the top live allocations by Python line, the lines that grew, the live memory over time by the top lines
where the history was recorded, and the map of the segments at the failure."""

from __future__ import annotations

from gputriage.model.run import RunReport
from gputriage.report.html_memory import lines_html, segments_html, timeline_html
from gputriage.report.html_page import Page, esc
from gputriage.report.memory_terminal import error_line, figures
from gputriage.report.run_memory_terminal import heading


def add_memory(page: Page, r: RunReport) -> None:
    m = r.memory
    if m is None:
        return
    s = m.state
    grew = any(f.id == "memory.growing" for f in m.findings) or any(
        f.id == "run.vram_growing" and "lines_grown" in f.evidence for f in r.findings
    )
    body = f'<p class="muted">{esc(figures(s))}</p>'
    if s.oom is not None:
        body += f"<p>{esc(error_line(s))}</p>"
        body += f'<p class="big">{esc(m.cause or "no cause named")}</p><p class="why">{esc(m.summary)}</p>'
    body += f'<p class="muted">The snapshot: {esc(m.source)} (<code>gputriage memory FILE</code> lists every line)</p>'
    body += "".join(f'<p class="muted">{esc(n)}</p>' for n in m.notes)
    title = heading(m)
    page.section(title, body)
    page.section("Top live allocations by Python line", lines_html(s.top_lines, grew))
    if grew and s.growth_lines:
        page.section("Lines whose live bytes grew", lines_html(s.growth_lines, True))
    page.section("Live memory over time, by line", timeline_html(page, s))
    page.section("Segment map at the failure" if s.oom else "Segment map at the snapshot", segments_html(s))
