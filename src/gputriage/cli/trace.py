"""`gputriage trace FILE...`: read PyTorch profiler traces and say where the time went."""

from __future__ import annotations

from pathlib import Path

import typer

from gputriage.cli import exits
from gputriage.cli.common import FAIL_ON_HELP, exit_for, fail, out, parse_fail_on, print_json


def trace(
    files: list[Path] = typer.Argument(
        ..., metavar="TRACE", help="Kineto chrome traces (.json or .json.gz), one per rank."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the analysis as JSON (schema gputriage.trace/2)."),
    top: int = typer.Option(10, "--top", metavar="N", min=0, help="Kernels to list."),
    fail_on: str = typer.Option("never", "--fail-on", metavar="LEVEL", help=FAIL_ON_HELP),
) -> None:
    """Time anatomy (busy by kind, idle by host cause), kernel table, verdict and findings. A file that
    cannot be read is named, the others analyzed, and the exit code is 3."""
    from gputriage import api

    threshold = parse_fail_on(fail_on)
    try:
        report = api.analyze_trace(files)
    except api.GputriageError as exc:
        fail(str(exc), exits.BAD_INPUT)
    if as_json:
        print_json(report)
    else:
        from gputriage.report.trace_terminal import render

        render(report, out, top=top)
    if report.problems:
        raise typer.Exit(exits.BAD_INPUT)
    raise typer.Exit(exit_for(report.findings, threshold))
