"""`gputriage runs` and `gputriage show RUN`: what the store holds."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table
from rich.text import Text

from gputriage.cli import exits
from gputriage.cli.common import fail, out, print_json
from gputriage.model.safe_text import safe_text
from gputriage.report.style import local_time


def runs(
    store_path: Optional[Path] = typer.Option(None, "--store", metavar="FILE", help="Run store (SQLite)."),
    as_json: bool = typer.Option(False, "--json", help='Print {"runs": [...]}.'),
    limit: int = typer.Option(50, "--limit", "-n", metavar="N", min=1, help="How many recent runs."),
) -> None:
    """List the runs and watches kept in the store, newest first."""
    from gputriage import api

    try:
        listed = api.runs(store_path, limit)
    except api.GputriageError as exc:
        fail(str(exc), exits.BAD_INPUT)
    if as_json:
        print_json({"runs": listed})
        return
    if not listed:
        out.print("no runs yet: `gputriage run -- COMMAND` keeps one (and `gputriage watch` a watch)")
        return
    rows = []
    for r in listed:
        started = local_time(r["started"], "%m-%d %H:%M")  # type: ignore[arg-type]
        dur = f"{r['ended'] - r['started']:.0f}s" if r["ended"] else "cut"  # type: ignore[operator]
        rows.append(
            [
                str(r["id"]),
                str(r["kind"]),
                started,
                dur,
                "" if r["exit_code"] is None else str(r["exit_code"]),
                str(r["bottleneck"] or "-"),
                " ".join(r["command"]),  # type: ignore[arg-type]
            ]
        )
    heads = ("id", "kind", "started", "dur", "exit", "bottleneck", "command")
    widths = [max([len(h)] + [len(row[k]) for row in rows]) for k, h in enumerate(heads)]
    room = max(10, out.width - sum(widths[:-1]) - 2 * (len(heads) - 1))  # one line per run: the command is cut
    t = Table(header_style="bold", box=None, pad_edge=False)
    for k, col in enumerate(heads):
        t.add_column(
            col,
            no_wrap=True,
            min_width=widths[k] if col != "command" else None,
            max_width=room if col == "command" else None,
            justify="right" if col in ("id", "dur", "exit") else "left",
        )
    for row in rows:  # one line each: a command's newlines shown as ⏎, its control characters replaced
        t.add_row(*row[:-1], Text(safe_text(row[-1], room, newline="⏎")))
    out.print(t)


def show(
    run_id: int = typer.Argument(..., metavar="RUN", help="A run id from `gputriage runs`."),
    store_path: Optional[Path] = typer.Option(None, "--store", metavar="FILE", help="Run store (SQLite)."),
    as_json: bool = typer.Option(
        False, "--json", help="Print the run's report as JSON (the document `run --json` printed)."
    ),
    price: Optional[float] = typer.Option(
        None, "--price", metavar="PER_GPU_HOUR", min=0.0, help="Count the run's cost again at this price per GPU-hour."
    ),
    currency: str = typer.Option("USD", "--currency", metavar="CODE", help="The currency of --price."),
) -> None:
    """Re-render a stored run. A run whose gputriage died is judged from the samples it kept."""
    from gputriage import api

    try:
        report = api.show(run_id, store_path, price_per_gpu_hour=price, currency=currency)
    except api.GputriageError as exc:
        fail(str(exc), exits.BAD_INPUT)
    if as_json:
        print_json(report)
        return
    from gputriage.report.run_terminal import render

    render(report, out)
