"""torch.compile in traces: the share of GPU time launched outside compiled regions, on a recorded H200 trace
of a compiled loop, whole and with part of it left eager."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from gputriage import api
from gputriage.report.html_trace import trace_page
from gputriage.report.trace_terminal import render

TRACES = Path(__file__).parent / "fixtures" / "h200" / "traces"
COMPILED = "run_profile_unfused_elementwise_fixed"  # a torch.compile'd chain of elementwise ops, 1,000 calls
MARKS = ("Torch-Compiled Region", "## Call CompiledFxGraph")


def text(report) -> str:
    console = Console(record=True, width=200)
    render(report, console)
    return console.export_text()


def test_a_compiled_loop_runs_all_its_gpu_work_inside_compiled_regions():
    rep = api.analyze_trace([TRACES / f"{COMPILED}.json.gz"])
    c = rep.ranks[0].compiled
    assert c is not None and c.regions == 1000 and c.compiled_us > 500_000
    assert c.outside_pct == 0 and c.outside_ops == {}
    assert "torch.compile: 1,000 compiled regions; 0% of GPU time" in text(rep)
    healthy = api.analyze_trace([TRACES / "healthy.json.gz"])  # eager: no region, no line
    assert healthy.ranks[0].compiled is None and "torch.compile" not in text(healthy)


def test_gpu_work_launched_where_the_compiled_regions_stop_is_counted_outside(tmp_path):
    # the same recorded loop with the marks of its last 400 calls removed: those calls ran eagerly (a graph break
    # leaves code to Python as silently)
    data = json.loads(gzip.decompress((TRACES / f"{COMPILED}.json.gz").read_bytes()))
    marks = sorted((e for e in data["traceEvents"] if e.get("name", "").startswith(MARKS)), key=lambda e: e["ts"])
    regions = [e for e in marks if e["name"].startswith(MARKS[0])]
    cut = regions[600]["ts"]
    data["traceEvents"] = [
        e for e in data["traceEvents"] if not (e.get("name", "").startswith(MARKS) and e["ts"] >= cut)
    ]
    path = tmp_path / "partly_eager.json"
    path.write_text(json.dumps(data))
    rep = api.analyze_trace([path])
    c = rep.ranks[0].compiled
    assert c is not None and c.regions == 600
    # the kernels are alike, one per call: 400 of the 1,000 calls' GPU time is outside
    assert c.outside_pct == pytest.approx(40, abs=3)
    whole = api.analyze_trace([TRACES / f"{COMPILED}.json.gz"]).ranks[0].compiled
    assert whole is not None and c.outside_us + c.compiled_us == pytest.approx(whole.compiled_us, rel=1e-6)
    assert next(iter(c.outside_ops)).startswith("triton_")  # the op Inductor records around its kernel's launch
    assert re.search(r"torch\.compile: 600 compiled regions; (39|40|41)% of GPU time", text(rep))
    assert "600 compiled regions" in trace_page(rep).render()
