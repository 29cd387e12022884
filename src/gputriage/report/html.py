"""`gputriage report`: any report kind as one self-contained HTML page."""

from __future__ import annotations

from typing import Union

from gputriage.model.baseline import Diff
from gputriage.model.bench import BenchReport
from gputriage.model.check import CheckReport
from gputriage.model.checklist import ChecklistReport
from gputriage.model.fleet import FleetReport
from gputriage.model.load import LoadReport
from gputriage.model.memory import MemoryReport
from gputriage.model.run import RunReport
from gputriage.model.trace import TraceReport

Reportable = Union[
    RunReport, TraceReport, BenchReport, CheckReport, ChecklistReport, Diff, LoadReport, FleetReport, MemoryReport
]


def render_html(report: Reportable) -> str:
    from gputriage.report import (
        html_bench,
        html_check,
        html_diff,
        html_fleet,
        html_load,
        html_memory,
        html_run,
        html_trace,
    )

    pages = {
        RunReport: html_run.run_page,
        TraceReport: html_trace.trace_page,
        BenchReport: html_bench.bench_page,
        CheckReport: html_check.check_page,
        ChecklistReport: html_check.checklist_page,
        Diff: html_diff.diff_page,
        LoadReport: html_load.load_page,
        FleetReport: html_fleet.fleet_page,
        MemoryReport: html_memory.memory_page,
    }
    page = pages.get(type(report))
    if page is None:
        raise TypeError(f"no HTML page for {type(report).__name__}")
    return page(report).render()  # type: ignore[operator]
