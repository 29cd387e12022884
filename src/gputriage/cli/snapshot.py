"""`gputriage snapshot -o FILE`: record everything check reads, for a bug report or a replay."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from gputriage.cli import exits
from gputriage.cli.common import err, fail


def snapshot(
    output: Path = typer.Option(..., "-o", "--output", metavar="FILE", help="File to write (JSON), or - for stdout."),
    window: float = typer.Option(
        0.5, "--window", metavar="SECONDS", min=0.1, max=10.0, help="Seconds for CPU and GPM windows."
    ),
    no_load: bool = typer.Option(False, "--no-load", help="Do not load the GPU briefly to read the PCIe link."),
) -> None:
    """Record every fact `check` reads, with the raw sources, to FILE. `check --from FILE` replays it."""
    from gputriage import api

    snap = api.snapshot(window_s=window, load=not no_load, framework=True, refresh=True)
    if str(output) == "-":
        sys.stdout.write(snap.to_text() + "\n")
        return
    try:
        snap.save(output)
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}", exits.BAD_INPUT)
    err.print(f"wrote {output} ({len(snap.facts)} facts)")
