"""`gputriage report RUN|TRACE|BENCH|CHECK -o report.html`."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Optional

import typer

from gputriage.cli.common import api_errors, err


def report(
    targets: list[str] = typer.Argument(
        ...,
        metavar="WHAT",
        help=(
            "A run's number in the store; `check` (this machine, now); a file written by `gputriage ... --json` "
            "(run, trace, bench, check, checklist, diff) or `gputriage snapshot`; or profiler traces, one per rank."
        ),
    ),
    output: Path = typer.Option(
        Path("gputriage-report.html"),
        "-o",
        "--output",
        metavar="FILE",
        help="The HTML file to write (replaced whole, never half-written).",
    ),
    store_path: Optional[Path] = typer.Option(None, "--store", metavar="FILE", help="Run store (SQLite)."),
) -> None:
    """One self-contained HTML page to look at and to share: no network, scripts and styles inline. A run's
    timeline (GPU-Util, SM activity, tensor, DRAM, power, SM clock, CPU) with its phases shaded and profiled
    windows marked; a trace's time anatomy, steps and kernels; bench figures against the datasheet; a check's
    findings by triage step; a diff's before and after — each with the findings and their decisions."""
    from gputriage.api.report import load_report, write_html

    status = err.status("reading…", spinner="dots") if err.is_terminal else contextlib.nullcontext()
    with api_errors(), status:
        model = load_report(targets, store_path)
        path = write_html(model, output)
    size = path.stat().st_size
    err.print(f"wrote {path} ({size / 1024:,.0f} kB)")
