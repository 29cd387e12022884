"""A diff in the HTML report: each figure before and after, with its spread, the change and whether it
is outside the noise; the verdicts; what changed in the environment."""

from __future__ import annotations

from gputriage.model.baseline import Diff, Figure
from gputriage.report.diff_terminal import verdicts
from gputriage.report.html_page import Page, Raw, esc, table
from gputriage.report.style import figure_text

A_COLOR, B_COLOR = "#8a93a3", "#3b7dd8"


_fig = figure_text


def _pair(a: Figure | None, b: Figure | None) -> Raw:
    """A before/after pair of bars on one scale, each with its spread drawn as a band."""
    top = max([x.high for x in (a, b) if x is not None] + [x.median for x in (a, b) if x is not None] or [0.0])
    if top <= 0:
        return Raw("")
    rows = []
    for f, color, side in ((a, A_COLOR, "A"), (b, B_COLOR, "B")):
        if f is None:
            rows.append(f'<div class="muted" style="font-size:11px">{side}: —</div>')
            continue
        lo, hi, mid = (100 * max(0.0, v) / top for v in (f.low, f.high, f.median))
        rows.append(
            f'<div class="bar" data-side="{side}" style="margin:2px 0" title="{side} {f.median:,.4g}">'
            f'<b style="left:{lo:.1f}%;width:{max(0.0, hi - lo):.1f}%;background:rgba(0,0,0,0.12)"></b>'
            f'<span style="width:{mid:.1f}%;background:{color};opacity:0.85"></span></div>'
        )
    return Raw("".join(rows))


def diff_html(d: Diff) -> str:
    rows = []
    unknown = False
    for c in d.changes:
        if c.called is None:
            unknown = unknown or c.change_pct is not None
            call = Raw("")
        elif c.called:
            word = "worse" if c.better is False else "better" if c.better else "changed"
            call = Raw(f'<b class="{"worse" if c.better is False else "better" if c.better else ""}">{word}</b>')
        else:
            call = Raw('<span class="muted">within noise</span>')
        rows.append(
            (
                c.figure,
                _fig(c.a),
                _fig(c.b),
                _pair(c.a, c.b),
                f"{c.change_pct:+.1f}%" if c.change_pct is not None else "",
                f"±{c.noise_pct:.1f}%" if c.noise_pct is not None else "",
                call,
            )
        )
    legend = (
        f'<div class="legend"><span><i style="background:{A_COLOR}"></i>A: {esc(d.a)}</span>'
        f'<span><i style="background:{B_COLOR}"></i>B: {esc(d.b)}</span></div>'
    )
    out = [legend, table(("figure", "A", "B", "", "change", "noise", ""), rows, numeric=(1, 2, 4, 5))]
    if unknown:
        out.append(
            '<p class="muted">One run on a side: the noise is unknown and no change is called (a baseline '
            "of several runs measures it).</p>"
        )
    verdict = esc(verdicts(d))
    out.append(f"<p><b>Verdict:</b> {verdict}</p>")
    if d.regressions:
        out.append(f'<p class="worse">Regressions: {esc(", ".join(d.regressions))}</p>')
    if d.environment:
        out.append(
            "<h3>What changed in the environment</h3>"
            + table(("", "A", "B"), ((e.key, e.a or "—", e.b or "—") for e in d.environment))
        )
    else:
        out.append('<p class="muted">Environment: the same.</p>')
    return "".join(out)


def diff_page(d: Diff) -> Page:
    page = Page(f"Diff: {d.a} → {d.b}", f"{len(d.changes)} figures compared")
    page.section("Before and after", diff_html(d))
    return page
