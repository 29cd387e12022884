"""`gputriage rules`: the catalog of every finding, with its thresholds."""

from __future__ import annotations

import sys
from typing import Optional

import typer
from rich.table import Table
from rich.text import Text

from gputriage.cli import exits
from gputriage.cli.common import fail, out, print_json
from gputriage.report.rules_markdown import rules_markdown


def rules(
    as_json: bool = typer.Option(False, "--json", help="Print the catalog as JSON (schema gputriage.rules/2)."),
    markdown: bool = typer.Option(
        False, "--markdown", help="Print the catalog as Markdown (the documentation's rules page)."
    ),
    command: Optional[str] = typer.Option(
        None,
        "--command",
        "-c",
        metavar="COMMAND",
        help="Only what this command can report: check, run, watch, monitor, trace, bench, load or fleet.",
    ),
    finding_id: Optional[str] = typer.Argument(
        None, metavar="ID", help="Show one finding id (or the ids starting with it)."
    ),
) -> None:
    """List every finding any command can report: id, triage step, severity, symptom, cause, decision,
    when it fires and its thresholds."""
    from gputriage import api
    from gputriage.diagnosis.catalog import COMMANDS

    if command is not None and command not in COMMANDS:
        fail(f"unknown command {command!r}: use one of {', '.join(COMMANDS)}", exits.USAGE)
    catalog = api.catalog(command)
    if finding_id:
        stem = finding_id.rstrip(".") + "."
        catalog.rules = [s for s in catalog.rules if s.id == finding_id or s.id.startswith(stem)]
        if not catalog.rules:
            fail(f"no finding {finding_id!r} in the catalog", exits.BAD_INPUT)
    if as_json:
        print_json(catalog)
        return
    if markdown:
        _write_utf8(rules_markdown(catalog))
        return
    for s in catalog.rules:
        t = Table.grid(padding=(0, 1))
        t.add_column(justify="right", no_wrap=True, width=9, style="dim")
        t.add_column(overflow="fold")
        head = Text(s.id, style="bold")
        head.append(f"  step {s.step} · {s.severity.value} · {', '.join(s.commands)}", style="dim")
        if s.needs:
            head.append(f" · needs {', '.join(s.needs)}", style="dim")
        t.add_row("", head)
        t.add_row("symptom:", s.symptom)
        t.add_row("cause:", s.cause)
        t.add_row("do:", Text(s.decision, style="green"))
        if s.condition:
            t.add_row("when:", s.condition)
        for th in s.thresholds:
            t.add_row("", Text(f"{th.name} = {th.value:g} {th.unit}: {th.meaning} ({th.source})", style="dim"))
        out.print(t)
        out.print()
    out.print(f"{len(catalog.rules)} findings")


def _write_utf8(text: str) -> None:
    """The page as UTF-8 whatever the locale, unwrapped (a redirect to a file is the usual reader)."""
    stream = getattr(sys.stdout, "buffer", None)
    if stream is None:
        sys.stdout.write(text)
        return
    sys.stdout.flush()
    stream.write(text.encode("utf-8"))
    stream.flush()
