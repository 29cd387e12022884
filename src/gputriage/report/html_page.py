"""One self-contained HTML page: sections of escaped HTML, charts described as data and drawn in the
browser by uPlot (inlined with its licence, ~50 kB), no network. The pieces every report kind uses:
findings, tables, bars against a reference, a stacked time anatomy."""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Iterable, Sequence
from importlib import resources
from typing import Any, Optional

import msgspec

from gputriage.model.finding import Finding
from gputriage.model.safe_text import KERNEL_CHARS, safe_text
from gputriage.model.version import __version__
from gputriage.report.style import SEVERITY_LABEL, local_time, plain

PALETTE = ("#3b7dd8", "#2e8b57", "#a34bc9", "#d9822b", "#c0392b", "#17a2b8", "#7f8c8d", "#8e6c3a", "#5d6d7e", "#e67e22")


def esc(value: Any, limit: int = KERNEL_CHARS) -> str:
    """A value as HTML text: escaped, without control characters, at most `limit` characters (a field of an
    attachment from anywhere must not swell the page)."""
    return html.escape(safe_text(value if isinstance(value, str) else plain(value), limit), quote=True)


def _asset(name: str) -> str:
    return (resources.files("gputriage.report") / "assets" / name).read_text(encoding="utf-8")


class Page:
    """Sections in order, and the charts their placeholders stand for."""

    def __init__(self, title: str, subtitle: str = "") -> None:
        self.title = title
        self.subtitle = subtitle
        self.sections: list[str] = []
        self.charts: list[dict[str, Any]] = []

    def section(self, heading: str, body: str, css: str = "") -> None:
        cls = f' class="{css}"' if css else ""
        self.sections.append(f"<section{cls}><h2>{esc(heading)}</h2>{body}</section>")

    def chart(
        self,
        title: str,
        x: Sequence[float],
        series: list[dict[str, Any]],
        *,
        axes: list[dict[str, Any]],
        x_label: str = "",
        kind: str = "line",
        bands: Optional[list[dict[str, Any]]] = None,
        marks: Optional[list[dict[str, Any]]] = None,
        sync: str = "",
        height: int = 240,
        x_log: Optional[int] = None,
    ) -> str:
        """A placeholder for a chart, and its data; returns the placeholder's HTML."""
        cid = f"chart{len(self.charts)}"
        for i, s in enumerate(series):
            s.setdefault("color", PALETTE[i % len(PALETTE)])
        self.charts.append(
            {
                "id": cid,
                "title": title,
                "x": list(x),
                "series": series,
                "axes": axes,
                "x_label": x_label,
                "kind": kind,
                "bands": bands or [],
                "marks": marks or [],
                "sync": sync,
                "height": height,
                "x_log": x_log,
            }
        )
        return f'<div class="chart" id="{cid}" data-kind="{esc(kind)}"></div>'

    def render(self) -> str:
        data = msgspec.json.encode({"charts": self.charts}).replace(b"</", b"<\\/").decode()
        now = dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
        sub = f'<p class="sub">{esc(self.subtitle)}</p>' if self.subtitle else ""
        return (
            '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(self.title)}</title><style>{_asset('uPlot.min.css')}\n{_asset('report.css')}</style>"
            f"</head><body><header><h1>{esc(self.title)}</h1>{sub}</header><main>{''.join(self.sections)}</main>"
            f"<footer>gputriage {esc(__version__)} · {esc(now)} · charts drawn with uPlot (MIT licence)</footer>"
            f'<script type="application/json" id="gt-data">{data}</script>'
            f"<script>{_asset('uPlot.iife.min.js')}</script><script>{_asset('report.js')}</script>"
            "</body></html>\n"
        )


def badge(severity: str, label: str | None = None) -> str:
    return f'<span class="badge sev-{esc(severity)}">{esc(label or severity.upper())}</span>'


def findings_html(findings: Iterable[Finding]) -> str:
    """Each finding: severity, symptom, id and subject, why, the decision and its evidence."""
    out = []
    for f in findings:
        subject = f" · {esc(f.subject)}" if f.subject else ""
        evidence = ", ".join(f"{esc(k)}={esc(v)}" for k, v in f.evidence.items())
        out.append(
            f'<div class="finding" data-finding="{esc(f.id)}">'
            f"{badge(f.severity.value, SEVERITY_LABEL[f.severity])}<b>{esc(f.symptom)}</b> "
            f'<span class="fid">{esc(f.id)}{subject}</span>'
            f'<div class="muted">{esc(f.cause)}</div><div class="decision">Do: {esc(f.decision)}</div>'
            + (
                f'<div class="impact">Gain: up to {f.impact:.0%} of the GPU\'s time (estimated)</div>'
                if f.impact is not None
                else ""
            )
            + (f'<div class="verify">Verify: <code>{esc(f.verify)}</code></div>' if f.verify else "")
            + (f'<div class="evidence">{evidence}</div>' if evidence else "")
            + "</div>"
        )
    return "".join(out) or '<p class="muted">No findings.</p>'


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Sequence[int] = ()) -> str:
    """Cells are escaped, except those given as `Raw`."""

    def cell(tag: str, i: int, v: Any) -> str:
        cls = ' class="num"' if i in numeric else ""
        return f"<{tag}{cls}>{v.html if isinstance(v, Raw) else esc(v)}</{tag}>"

    head = "".join(cell("th", i, h) for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


class Raw:
    """HTML made here (a bar, a badge), put in a table cell as it is."""

    def __init__(self, html_text: str) -> None:
        self.html = html_text


def bar(
    pct: float | None,
    color: str = "#3b7dd8",
    band: Optional[Sequence[float]] = None,
    marker_pct: float | None = None,
    scale_pct: float = 100.0,
) -> Raw:
    """A horizontal bar: `pct` of `scale_pct`, an optional shaded band and a marker (a reference)."""
    if pct is None:
        return Raw('<span class="muted">-</span>')
    width = max(0.0, min(100.0, 100 * pct / scale_pct))
    parts = []
    if band:
        lo, hi = (max(0.0, min(100.0, 100 * b / scale_pct)) for b in band[:2])
        parts.append(f'<b style="left:{lo:.1f}%;width:{hi - lo:.1f}%"></b>')
    parts.append(f'<span style="width:{width:.1f}%;background:{esc(color)}"></span>')
    if marker_pct is not None:
        parts.append(f'<i style="left:{max(0.0, min(100.0, 100 * marker_pct / scale_pct)):.1f}%"></i>')
    return Raw(f'<div class="bar" data-pct="{pct:.1f}">{"".join(parts)}</div>')


def stack(parts: Sequence[tuple[str, float, str]]) -> str:
    """One bar split in shares (label, %, colour), with its legend: where a window's time went."""
    spans = "".join(
        f'<span title="{esc(label)} {pct:.1f}%" style="width:{max(0.0, pct):.2f}%;background:{esc(c)}"></span>'
        for label, pct, c in parts
        if pct > 0
    )
    legend = "".join(
        f'<span><i style="background:{esc(c)}"></i>{esc(label)} {pct:.1f}%</span>' for label, pct, c in parts if pct > 0
    )
    return f'<div class="stack">{spans}</div><div class="legend">{legend}</div>'


def kv(pairs: Iterable[tuple[str, Any]]) -> str:
    items = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in pairs if v is not None and v != "")
    return f'<dl class="kv">{items}</dl>'


def when(unix_s: float | None) -> str:
    if not unix_s:
        return ""
    shown = local_time(unix_s, "%Y-%m-%d %H:%M:%S %Z")
    return "" if shown == "?" else shown
