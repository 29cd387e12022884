"""`gputriage report`: every report kind as one self-contained HTML page, built from real H200 recordings,
opened in a real headless Chromium (no console error, no request beyond the file, every chart drawn)."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from gputriage.api.report import load_report, write_html
from gputriage.diagnosis.run.judge import judge
from gputriage.model.run import ProfileReport, RunMeta, RunReport
from gputriage.model.sample import Sample
from gputriage.report.html import render_html
from gputriage.sampling.session import replay

FIXTURES = Path(__file__).parent / "fixtures" / "h200"
TRACES = FIXTURES / "traces"
TYPED = json.loads(gzip.decompress((FIXTURES / "runs_typed.json.gz").read_bytes()))
GT = [sys.executable, "-m", "gputriage"]


def judged(name: str, price: float | None = None, repeat: int = 1) -> RunReport:
    """A recorded run judged again; `repeat` lays its steady samples end to end (a longer run of the same)."""
    rec = TYPED[name]
    samples = [msgspec.convert(s, Sample) for s in rec["samples"]]
    if repeat > 1:
        span = samples[-1].t_s - samples[0].t_s + 0.1
        samples = [msgspec.structs.replace(s, t_s=s.t_s + k * span) for k in range(repeat) for s in samples]
    meta = msgspec.convert(rec["meta"], RunMeta)
    meta.price_per_gpu_hour = price
    report = judge(replay(samples, meta), 0)
    report.command = rec["command"]
    return report


def profiled_run() -> RunReport:
    """The launch-bound recording, with the trace `run --profile` wrote around a pathology on the H200."""
    from gputriage.api.trace import analyze_trace

    report = judged("item_sync", price=2.5)
    report.profile = ProfileReport(
        trace=analyze_trace(TRACES / "run_profile_item_sync.json.gz"), mode="on", asked=["the sampler's steady state"]
    )
    return report


def write(tmp_path: Path, model: object, name: str) -> Path:
    return write_html(model, tmp_path / f"{name}.html")  # type: ignore[arg-type]


def kinds(tmp_path: Path) -> dict[str, Path]:
    """One page of every kind, from recordings."""
    from gputriage.api.check import check
    from gputriage.api.checklist import checklist
    from gputriage.diagnosis.run.baseline import baseline, diff

    healthy, launch = judged("healthy"), judged("launch_bound")
    d = diff(baseline("a", [healthy], 0.0), baseline("b", [launch], 0.0), "run healthy", "run launch_bound")
    return {
        "run": write(tmp_path, profiled_run(), "run"),
        "trace": write(tmp_path, load_report([str(TRACES / "launch_bound.json.gz")]), "trace"),
        "bench": write(tmp_path, load_report([str(FIXTURES / "bench_h200.json")]), "bench"),
        "check": write(tmp_path, check(FIXTURES / "snapshot_busy.json"), "check"),
        "diff": write(tmp_path, d, "diff"),
        "checklist": write(tmp_path, checklist("box", snapshot=FIXTURES / "snapshot_busy.json"), "checklist"),
        # `gputriage load --json` against `transformers serve` (a tiny model on the dev machine's CPU)
        "load": write(tmp_path, load_report([str(FIXTURES.parent / "cpu" / "load_transformers_serve.json")]), "load"),
        # `gputriage fleet bench --json` on a local Ray cluster replaying recorded H200 snapshots and benches
        "fleet": write(tmp_path, load_report([str(FIXTURES.parent / "cpu" / "fleet_replayed_h200.json")]), "fleet"),
    }


def test_a_page_is_self_contained_and_escapes_what_it_shows(tmp_path):
    report = judged("launch_bound")
    report.command = ["python", "<script>alert(1)</script>.py"]
    text = render_html(report)
    assert "<script>alert(1)" not in text and "&lt;script&gt;alert(1)" in text
    # everything inline: no script, style or image fetched from anywhere
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", text)
    assert text.count("<script") == 3  # the data, uPlot, the drawing code
    data = json.loads(
        re.search(r'<script type="application/json" id="gt-data">(.*?)</script>', text, re.S)
        .group(1)
        .replace("<\\/", "</")
    )
    names = [s["label"] for c in data["charts"] for s in c["series"]]
    assert {
        "GPU-Util",
        "SM activity",
        "tensor pipes",
        "DRAM",
        "power (% of limit)",
        "SM clock (MHz, lowest)",
        "workload CPU (% of a core)",
    } <= set(names)
    bands = data["charts"][0]["bands"]
    assert [b["label"] for b in bands] == [t.regime for t in report.verdict.per_gpu["0"].timeline]


def test_an_hour_long_run_stays_small(tmp_path):
    """The timeline keeps at most a few hundred points per series: 300 times the samples (and, here, ~400
    phases, a start-up in each copy) make a page under 4 times the size of the 12 s run's (~65 kB, most of
    it uPlot and the styles)."""
    short = render_html(judged("healthy"))
    hour = judged("healthy", repeat=300)  # a 12 s recording laid end to end: 1 hour
    assert hour.ended_s and hour.started_s and hour.ended_s - hour.started_s > 3500
    text = render_html(hour)
    assert len(text) < 250_000, len(text)
    assert len(text) < 4 * len(short)


def test_every_kind_renders_its_own_sections(tmp_path):
    pages = {k: p.read_text() for k, p in kinds(tmp_path).items()}
    assert 'data-bottleneck="' in pages["run"] and "Profiler: Time anatomy" in pages["run"]
    assert "Kernels" in pages["trace"] and 'data-anatomy="0"' in pages["trace"]
    assert "matmul.bf16" in pages["bench"] and 'class="bar"' in pages["bench"]
    assert "1. Is the GPU actually used?" in pages["check"]
    assert 'data-side="A"' in pages["diff"] and "launch_bound" in pages["diff"]
    assert "sev-pass" in pages["checklist"] or "sev-fail" in pages["checklist"]
    assert os.stat(kinds(tmp_path)["run"]).st_mode & 0o044  # readable as any file the user writes


def test_the_command_writes_a_page_and_bad_input_is_one_line(tmp_path):
    out = tmp_path / "bench.html"
    r = subprocess.run(
        GT + ["report", str(FIXTURES / "bench_h200.json"), "-o", str(out)], capture_output=True, text=True
    )
    assert r.returncode == 0 and out.read_text().startswith("<!doctype html>") and "wrote" in r.stderr
    before = out.read_bytes()
    for args, code in (
        ([str(tmp_path / "missing.json")], 3),
        (["12345", "--store", str(tmp_path / "s.sqlite")], 3),
        ([str(FIXTURES / "bench_h200.json"), str(FIXTURES / "bench_h200.json")], 2),
        ([str(FIXTURES / "nvml_reference.json")], 3),
    ):
        r = subprocess.run(GT + ["report", *args, "-o", str(out)], capture_output=True, text=True)
        assert r.returncode == code, (args, r.stderr)
        assert r.stderr.startswith("gputriage: ") and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert out.read_bytes() == before  # a failed report leaves the last one whole
    r = subprocess.run(
        GT + ["report", str(FIXTURES / "bench_h200.json"), "-o", str(tmp_path / "no" / "x.html")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 3 and "no such folder" in r.stderr


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _browser():
    """playwright's API driving Debian's Chromium; CI (GPUTRIAGE_REQUIRE_BROWSER=1) fails without them."""
    required = os.environ.get("GPUTRIAGE_REQUIRE_BROWSER") == "1"
    try:
        from playwright import sync_api
    except ImportError:
        if required:
            raise
        pytest.skip("playwright is not installed (pip install gputriage[browser])")
    if CHROMIUM is None:
        assert not required, "Chromium is not installed"
        pytest.skip("Chromium is not installed (CI installs Debian's chromium)")
    return sync_api


def test_every_kind_opens_in_headless_chromium_with_its_charts_drawn(tmp_path):
    """Each page in a real browser: no console message or page error, no request but the file itself, every
    chart placeholder drawn by uPlot (a canvas in it), and a screenshot kept."""
    sync_api = _browser()
    shots = Path(os.environ.get("GPUTRIAGE_TEST_ARTIFACTS", tmp_path)) / "reports"
    shots.mkdir(parents=True, exist_ok=True)
    pages = kinds(tmp_path)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        try:
            for kind, path in pages.items():
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                console, errors, requests = [], [], []
                page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.on("request", lambda r: requests.append(r.url))
                page.goto(path.as_uri())
                page.wait_for_load_state("load")
                placeholders = page.locator("div.chart").count()
                assert console == [] and errors == [], (kind, console, errors)
                assert requests == [path.as_uri()], (kind, requests)
                assert page.get_attribute("body", "data-charts-drawn") == str(placeholders), kind
                assert page.locator("div.chart[data-drawn='1'] canvas").count() == placeholders, kind
                if kind in ("run", "trace"):
                    assert placeholders >= 1 and page.locator("[data-bottleneck]").count() >= 1, kind
                    assert page.locator(".finding").count() >= 1, kind
                if kind == "fleet":
                    assert page.locator("[data-figure='pcie_width']").count() == 4
                    assert page.get_by_text("Below the fleet").count() == 1
                if kind == "load":
                    assert placeholders == 2 and page.locator("[data-knee]").count() == 1
                if kind in ("bench", "diff"):
                    assert page.locator(".bar").count() >= 4, kind
                box = page.locator("main").bounding_box()
                assert box is not None and box["height"] > 300, kind  # laid out, not an empty page
                page.screenshot(path=str(shots / f"{kind}.png"), full_page=True)
                page.close()
        finally:
            browser.close()
    assert sorted(x.stem for x in shots.glob("*.png")) >= sorted(pages)
