"""`gputriage join FILES_OR_FOLDERS...`: one distributed job's ranks joined from the records of its nodes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from gputriage.cli.common import FAIL_ON_HELP, api_errors, err, exit_for, out, parse_fail_on, to_json


def join(
    paths: list[Path] = typer.Argument(
        ...,
        metavar="PATH",
        help="Run reports (`run -o FILE`, `run --json`), run "
        "stores, or folders holding them (copied together, or a shared folder).",
    ),
    job: Optional[str] = typer.Option(
        None,
        "--job",
        metavar="ID",
        help="The job's id (TORCHELASTIC_RUN_ID, SLURM_JOB_ID, GPUTRIAGE_JOB_ID), where the records hold several jobs.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the joined report as JSON."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", metavar="FILE", help="Also write the JSON here."),
    fail_on: str = typer.Option("never", "--fail-on", metavar="LEVEL", help=FAIL_ON_HELP),
) -> None:
    """Join the records each node's `gputriage run` kept of one distributed job into one per-rank report: every
    rank side by side, the straggler the others wait for and why, the hangs."""
    from gputriage.api.join import join as join_records  # the library when the command runs: --help stays quick

    threshold = parse_fail_on(fail_on)
    with api_errors():
        report = join_records(paths, job)
    text = to_json(report)
    if output is not None:
        try:
            output.write_text(text + "\n")
        except OSError as exc:
            err.print(f"gputriage: cannot write {output}: {exc.strerror or exc}")
    if as_json:
        sys.stdout.write(text + "\n")
    else:
        from gputriage.report.ranks_terminal import render_join

        render_join(report, out)
    raise typer.Exit(exit_for(report.findings, threshold))
