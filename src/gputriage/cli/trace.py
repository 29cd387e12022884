"""`gputriage trace FILE...`: read PyTorch profiler traces and say where the time went."""

from __future__ import annotations

from pathlib import Path
from typing import List

import typer

from gputriage.cli import exits
from gputriage.cli.common import exit_for, fail, out, parse_fail_on, print_json


def trace(
    files: List[Path] = typer.Argument(..., help="Kineto chrome traces (.json or .json.gz), one per rank."),
    as_json: bool = typer.Option(False, "--json", help="Print the analysis as JSON (schema gputriage.trace/1)."),
    top: int = typer.Option(10, "--top", help="Kernels to list."),
    fail_on: str = typer.Option("never", "--fail-on", help="Exit 1 when a finding is at or above this severity."),
) -> None:
    """Time anatomy (busy by kind, idle by host cause), kernel table, verdict and findings."""
    from gputriage.trace.analyze import analyze
    from gputriage.trace.load import TraceError

    threshold = parse_fail_on(fail_on)
    try:
        report, findings = analyze(list(files))
    except TraceError as exc:
        fail(str(exc), exits.BAD_INPUT)
    if as_json:
        print_json(report | {"findings": [f.to_json() for f in findings]})
    else:
        from gputriage.report.trace_terminal import render

        render(report, findings, out, top=top)
    raise typer.Exit(exit_for(findings, threshold))
