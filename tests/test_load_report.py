"""A load test as shown: in a terminal of any width or a pipe, every figure whole (columns that do not fit go
to a second table); the knee, or why there is none; on the HTML page, the steps' tables within their cards
and the SLO bounds drawn on the latency chart."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from rich.console import Console

from gputriage.api._common import keep_report
from gputriage.diagnosis.serving.judge import findings
from gputriage.diagnosis.serving.knee import knee
from gputriage.model.load import Knee, LoadReport
from gputriage.report.html_load import load_page
from gputriage.report.load_terminal import render

FIXTURES = Path(__file__).parent / "fixtures"
GT = [sys.executable, "-m", "gputriage"]


def _sweep() -> LoadReport:
    """The H200 sweep (concurrency 1-256, SLOs, a GPU column), judged by today's rules."""
    r = msgspec.json.decode((FIXTURES / "h200" / "load_transformers_serve_sweep.json").read_bytes(), type=LoadReport)
    r.knee, r.findings = knee(r.steps, r.meta.slo), findings(r.steps)
    return r


def _shown(r: LoadReport, width: int) -> str:
    console = Console(width=width, file=io.StringIO(), highlight=False, color_system=None)
    render(r, console)
    return console.file.getvalue()


def _figures(r: LoadReport) -> list[str]:
    """Every figure a step's row shows, as the table writes it."""
    from gputriage.report.load_terminal import _ms

    out = []
    for s in r.steps:
        out += [
            f"{s.requests_per_s:.2f}",
            f"{s.output_tokens_per_s:,.0f}",
            _ms(s.ttft.p50_ms),
            _ms(s.ttft.p99_ms),
            _ms(s.itl.p50_ms),
            _ms(s.itl.p99_ms),
            _ms(s.tpot.p50_ms),
            _ms(s.e2e.p99_ms),
        ]
    return out


@pytest.mark.parametrize("width", [60, 80, 100, 160])
def test_no_figure_is_cut_at_any_width(width):
    r = _sweep()
    text = _shown(r, width)
    assert "…" not in text
    words = set(re.split(r"\s+", text))
    missing = [f for f in _figures(r) if f not in words]
    assert not missing, (width, missing)
    table_lines = text.split("latencies in ms")[0].splitlines()
    assert max(len(line.rstrip()) for line in table_lines) <= width
    assert text.count("\nload ") == (1 if width >= 120 else 2)  # a second table holds what did not fit


def test_a_piped_load_test_with_slos_shows_every_figure(tmp_path):
    """`gputriage load --show ID | cat`: no terminal, the default width — no `82…`."""
    store = tmp_path / "s.sqlite"
    r = _sweep()
    keep_report(r, "load", [r.meta.url], store)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    shown = subprocess.run(
        GT + ["load", "--show", str(r.id), "--store", str(store)], capture_output=True, text=True, env=env, timeout=120
    )
    assert shown.returncode == 0, shown.stderr
    assert "…" not in shown.stdout and "..." not in shown.stdout
    words = set(shown.stdout.split())
    assert not [f for f in _figures(r) if f not in words]
    assert "knee: concurrency 1" in shown.stdout


def test_the_knee_or_why_there_is_none_is_said():
    r = _sweep()
    r.knee = Knee(by="none", why="throughput still rising at concurrency 256")
    assert "no knee within the sweep: throughput still rising at concurrency 256" in _shown(r, 120)
    page = load_page(r).render()
    assert "no knee within the sweep" in page and "data-knee" not in page


def _charts(page_html: str) -> list[dict]:
    data = re.search(r'<script type="application/json" id="gt-data">(.*?)</script>', page_html, re.S)
    assert data is not None
    return list(json.loads(data.group(1))["charts"])


def test_the_slo_bounds_are_drawn_on_the_latency_chart():
    r = _sweep()  # --slo ttft=500ms,tpot=50ms at p90
    latency = next(c for c in _charts(load_page(r).render()) if c["title"] == "Latency against the load")
    series = {s["label"]: s["values"] for s in latency["series"]}
    steps = [s for s in r.steps if not s.control]
    assert series["SLO: TTFT p90 ≤ 500 ms"] == [500.0] * len(steps)
    assert series["SLO: TPOT p90 ≤ 50 ms"] == [50.0] * len(steps)
    assert series["TPOT p90"] == [s.tpot.p90_ms for s in steps]  # the percentile the SLO holds, beside its bound
    r.meta.slo = None
    latency = next(c for c in _charts(load_page(r).render()) if c["title"] == "Latency against the load")
    assert not [s for s in latency["series"] if s["label"].startswith("SLO")]


def test_the_steps_tables_stay_within_their_cards_in_chromium(tmp_path):
    """At 1280 and 1024 pixels wide, no section of the load page is wider than its card (the one table of 17
    columns overflowed by 31 px), and the SLO bounds are in the latency chart's legend."""
    from test_html_report import CHROMIUM, _browser

    sync_api = _browser()
    path = tmp_path / "load.html"
    path.write_text(load_page(_sweep()).render())
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            for width in (1280, 1024):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto(path.as_uri())
                page.wait_for_load_state("load")
                over = page.evaluate("""() => [...document.querySelectorAll('section')]
                    .filter(s => s.scrollWidth > s.clientWidth)
                    .map(s => s.querySelector('h2').textContent + ': ' + (s.scrollWidth - s.clientWidth) + ' px')""")
                assert over == [], (width, over)
                assert page.locator("section h2", has_text="Steps").count() == 2
                assert page.get_by_text("SLO: TTFT p90 ≤ 500 ms").count() >= 1
                page.close()
        finally:
            browser.close()
