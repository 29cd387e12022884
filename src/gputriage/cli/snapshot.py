"""`gputriage snapshot -o FILE`: record everything check reads, for a bug report or a replay."""

from __future__ import annotations

from pathlib import Path

import typer

from gputriage.cli import exits
from gputriage.cli.common import err, fail


def snapshot(
    output: Path = typer.Option(..., "-o", "--output", help="File to write (JSON)."),
    window: float = typer.Option(0.5, "--window", min=0.1, max=10.0, help="Seconds for CPU and GPM windows."),
    no_load: bool = typer.Option(False, "--no-load", help="Do not load the GPU briefly to read the PCIe link."),
) -> None:
    """Record every fact `check` reads, with the raw sources, to FILE. `check --from FILE` replays it."""
    from gputriage import api

    snap = api.snapshot(window_s=window, load=not no_load, framework=True, refresh=True)
    try:
        snap.save(output)
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}", exits.BAD_INPUT)
    err.print(f"wrote {output} ({len(snap.facts)} facts)")
