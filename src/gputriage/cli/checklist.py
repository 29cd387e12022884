"""`gputriage checklist box|training|inference`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from gputriage.cli import exits
from gputriage.cli.common import fail, out, print_json


def checklist(
    kind: str = typer.Argument(..., metavar="KIND", help="box, training or inference."),
    run_id: Optional[int] = typer.Option(
        None, "--run", metavar="RUN", help="The stored run that decides the training and inference items."
    ),
    source: Optional[Path] = typer.Option(
        None, "--from", metavar="SNAPSHOT", help="Decide the box items from a recorded snapshot."
    ),
    load_id: Optional[int] = typer.Option(
        None, "--load", metavar="ID", help="The stored load test (`gputriage load`) that decides inference items."
    ),
    full: bool = typer.Option(
        False,
        "--full",
        help="Also measure the working directory's reads (~2 s, a 64 MiB temporary file): the storage item needs them.",
    ),
    store_path: Optional[Path] = typer.Option(None, "--store", metavar="FILE", help="Run store (SQLite)."),
    as_json: bool = typer.Option(False, "--json", help="Print the checklist as JSON."),
    fail_on_fail: bool = typer.Option(False, "--fail-on-fail", help=f"Exit {exits.FINDINGS} when an item fails."),
) -> None:
    """The playbook's checklists: a sane GPU box, stable inference, reliable training. Each item is decided by a
    measurement where one decides it (pass / fail / unknown, with its evidence and the command), else asked."""
    from gputriage import api
    from gputriage.model.checklist import Status

    try:
        report = api.checklist(kind, run_id, store_path, source, load_id, full=full)
    except api.GputriageError as exc:
        fail(str(exc), exits.USAGE if str(exc).startswith("no checklist") else exits.BAD_INPUT)
    if as_json:
        print_json(report)
    else:
        from gputriage.report.checklist_terminal import render

        render(report, out)
    if fail_on_fail and any(i.status == Status.failed for i in report.items):
        raise typer.Exit(exits.FINDINGS)
