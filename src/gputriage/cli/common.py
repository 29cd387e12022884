"""What several subcommands share: consoles, errors, the live backends, --fail-on."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer
from rich.console import Console

from gputriage.cli import exits
from gputriage.model.finding import Finding, Severity

out = Console(highlight=False, soft_wrap=False)
err = Console(stderr=True, highlight=False)


def fail(message: str, code: int) -> NoReturn:
    """One line on stderr (never wrapped), then exit with `code`."""
    sys.stderr.write(f"gputriage: {message}\n")
    raise typer.Exit(code)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def parse_fail_on(text: str) -> Severity | None:
    if text.strip().lower() == "never":
        return None
    try:
        return Severity.parse(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc) + " or never") from None


def exit_for(findings: list[Finding], fail_on: Severity | None) -> int:
    if fail_on is not None and any(f.severity >= fail_on for f in findings):
        return exits.FINDINGS
    return exits.OK


def live_backends():  # noqa: ANN201 - returns (nvml, host)
    from gputriage.backends.host import Host
    from gputriage.backends.nvml import PynvmlBackend

    return PynvmlBackend(), Host()


def budget_or_fail(path):  # noqa: ANN001, ANN201 - Path | None → Budget | None
    """The budget file's limits, or a one-line error and exit 3."""
    if path is None:
        return None
    from gputriage.monitor.budget import BudgetError, load_budget

    try:
        return load_budget(path)
    except BudgetError as exc:
        fail(str(exc), exits.BAD_INPUT)


def store_or_fail(path, disabled: bool = False):  # noqa: ANN001, ANN201 - Path | None → Store | None
    """The run store (None when disabled), or a one-line error and exit 3."""
    if disabled:
        return None
    from gputriage.monitor.store import Store, StoreError

    try:
        return Store(path)
    except StoreError as exc:
        fail(str(exc), exits.BAD_INPUT)
