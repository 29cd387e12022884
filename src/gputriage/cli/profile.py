"""`gputriage profile RUN`: ask a running `gputriage run` for one profile window, and say where its trace is."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer

from gputriage.cli import exits
from gputriage.cli.common import fail, print_json
from gputriage.model.safe_text import safe_text


def profile(
    run_id: int = typer.Argument(..., metavar="RUN", help="A running run's id (`gputriage runs` shows it)."),
    store_path: Optional[Path] = typer.Option(None, "--store", metavar="FILE", help="Run store (SQLite)."),
    out_path: Optional[Path] = typer.Option(
        None,
        "--out",
        metavar="FILE",
        help="Where to write the trace (default: gputriage-runRUN-profile.json "
        "here; a distributed job's ranks as FILE.rankN.json).",
    ),
    wait: float = typer.Option(
        300.0, "--wait", metavar="SECONDS", min=0.0, help="How long to wait for the trace (0: only ask)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the run's answer as JSON."),
) -> None:
    """Profile one window of a running `gputriage run` now (its profiler re-armed in the workload), from another
    terminal; SIGUSR1 to the `gputriage run` process does the same. Exit 0 when the trace is written (or, with
    --wait 0, asked for), 1 when the run could not profile it, 3 when there is no such running run or its workload
    has not used CUDA (nothing to profile: said at once)."""
    from gputriage.api._common import GputriageError
    from gputriage.api.profile import ask_profile

    def said(answer: dict[str, Any]) -> None:
        if not as_json and answer.get("state") == "asked":  # one line: a path is copied whole
            sys.stderr.write(
                f"run {run_id}: window {answer.get('window')} asked; its trace goes to "
                f"{safe_text(answer.get('trace'), 500)}\n"
            )

    try:
        answer = ask_profile(run_id, store_path, out_path, wait, said)
    except GputriageError as exc:
        fail(str(exc), exits.BAD_INPUT)
    state = answer.get("state")
    if state == "no_cuda" and not as_json:
        fail(f"run {run_id} has nothing to profile: {answer.get('error')}", exits.BAD_INPUT)
    if as_json:
        print_json(answer)
    elif state == "written":
        t0, t1 = (answer.get("window_s") or [0.0, 0.0])[:2]
        print(
            f"profiled {t1 - t0:.2f} s (window {answer.get('window')}): trace written to "
            f"{safe_text(answer.get('trace'), 2000)}"
        )
    elif state == "failed":
        sys.stderr.write(
            f"gputriage: run {run_id} could not profile the window: {safe_text(answer.get('error'), 500)}\n"
        )
    elif wait > 0:
        sys.stderr.write(
            f"gputriage: no trace within {wait:.0f} s; the run will still write it to "
            f"{safe_text(answer.get('trace'), 500)}\n"
        )
    if state == "no_cuda":
        raise typer.Exit(exits.BAD_INPUT)
    raise typer.Exit(exits.FINDINGS if state == "failed" or (state == "asked" and wait > 0) else exits.OK)
