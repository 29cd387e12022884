"""`gputriage rules`: the catalog of rules, with their thresholds."""

from __future__ import annotations

import typer
from rich.table import Table

from gputriage.cli.common import out, print_json


def rules(as_json: bool = typer.Option(False, "--json", help="Print {\"rules\": [...]}")) -> None:
    """List every rule: id, triage step, symptom, cause, decision, threshold."""
    from gputriage.rules import default_rules

    catalog = default_rules()
    if as_json:
        print_json({"rules": [r.to_json() for r in catalog]})
        return
    t = Table(show_lines=True, header_style="bold")
    for col in ("id", "step", "symptom → cause", "decision", "threshold"):
        t.add_column(col, overflow="fold")
    for r in catalog:
        t.add_row(r.id, str(r.step), f"{r.symptom}\n[dim]{r.cause}[/dim]", r.decision, f"[dim]{r.threshold}[/dim]")
    out.print(t)
    out.print(f"{len(catalog)} rules")
