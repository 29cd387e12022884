"""`gputriage memory FILE`: what filled the GPU, and what kind of out-of-memory error it was."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from gputriage.cli import exits
from gputriage.cli.common import FAIL_ON_HELP, exit_for, fail, out, parse_fail_on, print_json


def memory(
    file: Path = typer.Argument(
        ...,
        metavar="FILE",
        help="An allocator snapshot: the pickle torch.cuda.memory._dump_snapshot() writes (gzip too), or one "
        "`gputriage run` saved at an out-of-memory error.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON (schema gputriage.memory/1)."),
    device: Optional[int] = typer.Option(
        None, "--device", metavar="N", min=0, help="The GPU to read (default: the one that ran out of memory)."
    ),
    top: int = typer.Option(10, "--top", metavar="N", min=0, help="Lines to list."),
    fail_on: str = typer.Option("never", "--fail-on", metavar="LEVEL", help=FAIL_ON_HELP),
) -> None:
    """The top live allocations by Python line, the allocator's fragmentation, and — at an out-of-memory error —
    which of five causes it was: one request too large, growth, another process, fragmentation, or the steady
    peak. The pickle is read as plain data only: one that would build any other object is refused (exit 3)."""
    from gputriage import api
    from gputriage.api.memory import analyze_memory

    threshold = parse_fail_on(fail_on)
    try:
        report = analyze_memory(file, device=device, bounded=True)
    except api.UsageError as exc:
        fail(str(exc), exits.USAGE)
    except api.GputriageError as exc:
        fail(str(exc), exits.BAD_INPUT)
    if as_json:
        print_json(report)
    else:
        from gputriage.report.memory_terminal import render

        render(report, out, top=top)
    raise typer.Exit(exit_for(report.findings, threshold))
