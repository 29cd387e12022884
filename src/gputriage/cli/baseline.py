"""`gputriage baseline save NAME RUN...` and `gputriage diff A B`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from gputriage.cli import exits
from gputriage.cli.common import fail, print_json

baseline_app = typer.Typer(
    help="Keep what a workload achieves, by name, to compare later runs with.", no_args_is_help=True
)


@baseline_app.command("save")
def save(
    name: str = typer.Argument(..., help="The baseline's name (not a number: numbers name runs)."),
    run_ids: list[int] = typer.Argument(
        ..., metavar="RUN", help="Run ids from `gputriage runs`: several runs give the noise (median and spread)."
    ),
    store_path: Optional[Path] = typer.Option(None, "--store", metavar="FILE", help="Run store (SQLite)."),
    as_json: bool = typer.Option(False, "--json", help="Print the baseline as JSON."),
) -> None:
    """Keep a baseline of runs: each figure's median and spread, the verdicts, the environment's fingerprint."""
    from gputriage import api
    from gputriage.api.baseline import save_baseline

    try:
        b = save_baseline(name, run_ids, store_path)
    except api.GputriageError as exc:
        fail(str(exc), exits.BAD_INPUT)
    if as_json:
        print_json(b)
        return
    from gputriage.report.diff_terminal import render_baseline

    render_baseline(b)


def diff(
    a: str = typer.Argument(..., metavar="A", help="A run id, or a baseline's name."),
    b: str = typer.Argument(..., metavar="B", help="A run id, or a baseline's name."),
    store_path: Optional[Path] = typer.Option(None, "--store", metavar="FILE", help="Run store (SQLite)."),
    as_json: bool = typer.Option(False, "--json", help="Print the diff as JSON."),
    fail_on_regression: bool = typer.Option(
        False, "--fail-on-regression", help=f"Exit {exits.FINDINGS} when B regressed against A beyond the noise."
    ),
    html: Optional[Path] = typer.Option(
        None, "--html", metavar="FILE", help="Also write the diff as a self-contained HTML page."
    ),
) -> None:
    """Two runs or baselines side by side: each figure's change, called only outside the measured noise, the
    verdicts, and what changed in the environment."""
    from gputriage import api
    from gputriage.api.baseline import diff as compare

    try:
        d = compare(a, b, store_path)
    except api.GputriageError as exc:
        fail(str(exc), exits.BAD_INPUT)
    if html is not None:
        from gputriage.api.report import write_html

        try:
            write_html(d, html)
        except api.GputriageError as exc:
            fail(str(exc), exits.BAD_INPUT)
    if as_json:
        print_json(d)
    else:
        from gputriage.report.diff_terminal import render_diff

        render_diff(d)
    if fail_on_regression and d.regressions:
        raise typer.Exit(exits.FINDINGS)
