"""The run's terminal timeline: GPU-Util, SM activity, tensor pipes, DRAM and power on one time axis
over a row of phases, from a recorded H200 run."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import msgspec
from rich.console import Console

from gputriage.diagnosis.run.judge import judge
from gputriage.model.run import RunMeta
from gputriage.model.sample import Sample
from gputriage.report.run_terminal import render
from gputriage.sampling.session import replay

TYPED = json.loads(gzip.decompress((Path(__file__).parent / "fixtures" / "h200" / "runs_typed.json.gz").read_bytes()))


def _render(name: str, gpm: bool = True) -> tuple[str, object]:
    rec = TYPED[name]
    samples = [msgspec.convert(s, Sample) for s in rec["samples"]]
    if not gpm:
        for s in samples:
            s.gpus = [
                msgspec.structs.replace(g, sm_active_pct=None, tensor_active_pct=None, dram_active_pct=None)
                for g in s.gpus
            ]
    report = judge(replay(samples, msgspec.convert(rec["meta"], RunMeta)), 0)
    buf = io.StringIO()
    render(report, Console(file=buf, width=100, force_terminal=False))
    return buf.getvalue(), report


def test_the_timeline_plots_every_figure_over_its_phases():
    text, report = _render("gpt_loop")
    rows = {line.split()[0]: line for line in text.splitlines() if line.startswith("  ") and line.split()}
    for label in ("GPU-Util", "SM", "tensor", "DRAM", "power", "phase"):
        assert label in rows, text
    s = report.verdict.per_gpu["0"].series
    assert len(s.power_pct) == len(s.t_s) == len(s.tensor_active_pct) and max(p for p in s.power_pct if p) > 80
    phase = rows["phase"].split()[1]
    assert phase.startswith("s") and "C" in phase  # start-up, then the compute_bound steady state
    assert "s start-up" in text and "C compute_bound" in text


def test_without_gpm_only_what_the_gpu_gives_is_plotted():
    text, report = _render("healthy", gpm=False)
    labels = {line.split()[0] for line in text.splitlines() if line.startswith("  ") and line.split()}
    assert {"GPU-Util", "power", "phase"} <= labels and not labels & {"SM", "tensor", "DRAM"}
    assert report.verdict.per_gpu["0"].series.sm_active_pct == []
