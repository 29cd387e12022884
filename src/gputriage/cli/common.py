"""What several subcommands share: consoles, one-line errors, JSON output, --fail-on."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Callable, Iterator, NoReturn

import msgspec
import typer
from rich.console import Console

from gputriage.cli import exits
from gputriage.model.finding import Finding, Severity


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """A reader that stopped early (`gputriage rules | head`) has what it wanted: not an error."""
        stream = sys.stderr if self.stderr else sys.stdout
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        raise SystemExit(exits.OK)


out = _Console(highlight=False, soft_wrap=False)
err = _Console(stderr=True, highlight=False)


def fail(message: str, code: int) -> NoReturn:
    """One line on stderr (never wrapped), then exit with `code`."""
    sys.stderr.write(f"gputriage: {message}\n")
    raise typer.Exit(code)


def to_json(data: Any) -> str:
    """A report (or any msgspec-encodable value) as indented JSON."""
    return msgspec.json.format(msgspec.json.encode(data), indent=2).decode()


def print_json(data: Any) -> None:
    sys.stdout.write(to_json(data) + "\n")


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


@contextlib.contextmanager
def api_errors() -> Iterator[None]:
    """The library's refusals as one line and their exit code: a bad command line 2, anything else 3."""
    from gputriage.api._common import GputriageError, UsageError

    try:
        yield
    except UsageError as exc:
        fail(str(exc), exits.USAGE)
    except GputriageError as exc:
        fail(str(exc), exits.BAD_INPUT)


FAIL_ON_HELP = "Exit 1 when a finding is at or above this severity: info, warn, critical, or never."


@contextlib.contextmanager
def spinner(first: str = "starting") -> Iterator[Callable[[str], None]]:
    """A one-line progress display on stderr (on a terminal only); yields what to call with what runs now."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err,
                  transient=True, disable=not err.is_terminal) as progress:
        task = progress.add_task(first, total=None)
        yield lambda what: progress.update(task, description=what)
