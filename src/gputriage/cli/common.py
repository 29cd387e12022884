"""What several subcommands share: consoles, one-line errors, JSON output, --fail-on."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Callable, Iterator, NoReturn, Optional

import msgspec
import typer
import typer.core
from rich.console import Console

from gputriage.cli import exits
from gputriage.model.finding import Finding, Severity
from gputriage.model.safe_text import CONTROL, has_control, safe_text
from gputriage.report.terminal import PrintableHook

MESSAGE_CHARS = 2000  # an error message quotes what it could not use, this much of it at most


class _Console(Console):
    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.push_render_hook(PrintableHook())  # no control characters from the data, no trailing spaces

    def on_broken_pipe(self) -> None:
        """A reader that stopped early (`gputriage rules | head`) has what it wanted: not an error."""
        stream = sys.stderr if self.stderr else sys.stdout
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        raise SystemExit(exits.OK)


out = _Console(highlight=False, soft_wrap=False)
err = _Console(stderr=True, highlight=False)


def fail(message: str, code: int) -> NoReturn:
    """One line on stderr (never wrapped, no control characters), then exit with `code`."""
    sys.stderr.write(f"gputriage: {safe_text(message, MESSAGE_CHARS)}\n")
    raise typer.Exit(code)


def to_json(data: Any) -> str:
    """A report (or any msgspec-encodable value) as indented JSON; characters that could drive a terminal
    (C1 controls, bidirectional overrides: JSON lets them stand raw in strings) written as \\u escapes, the
    same JSON."""
    text = msgspec.json.format(msgspec.json.encode(data), indent=2).decode()
    if not has_control(text.replace("\n", "")):
        return text
    return CONTROL.sub(lambda m: m.group() if m.group() == "\n" else f"\\u{ord(m.group()):04x}", text)


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


OPTION_METAVARS = {"currency": "CODE", "model": "NAME", "price": "PER_GPU_HOUR"}  # an option's value, where its
# declaration names none


def argument_name(param: Any) -> str:
    """An argument as the help shows it: RUN, [ID] when it may be left out, COMMAND... when it takes several."""
    name = param.metavar or (param.name or "").upper()
    if not param.required:
        name = f"[{name}]"
    return name + ("..." if param.nargs != 1 else "")


class Command(typer.core.TyperCommand):
    """A subcommand whose help reads naturally: `Usage: gputriage run [OPTIONS] COMMAND...`, its arguments named
    as in the usage line, without a Python type after them (`<list[str]>`)."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        return pieces + [argument_name(p) for p in self.get_params(ctx) if p.param_type_name == "argument"]

    def format_options(self, ctx: Any, formatter: Any) -> None:
        args, opts = [], []
        for param in self.get_params(ctx):
            if param.param_type_name == "option" and param.metavar is None and not getattr(param, "is_flag", True):
                param.metavar = OPTION_METAVARS.get(param.name or "", (param.name or "value").upper())  # not <str>
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                args.append((argument_name(param), record[1]))
            else:
                opts.append(record)
        for title, rows in (("Arguments", args), ("Options", opts)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def natural_help(app: typer.Typer) -> None:
    """Every subcommand of `app`, its groups' included, made a `Command`."""
    for info in app.registered_commands:
        info.cls = Command
    for group in app.registered_groups:
        if group.typer_instance is not None:
            natural_help(group.typer_instance)


FAIL_ON_HELP = "Exit 1 when a finding is at or above this severity: info, warn, critical, or never."


def _minutes_as_s(minutes: Optional[float]) -> Optional[float]:
    return None if minutes is None else minutes * 60.0


IDLE_AFTER = typer.Option(  # given in minutes, passed on in seconds (a command's `idle_held_min_s`)
    None,
    "--idle-after",
    metavar="MINUTES",
    min=0.1,
    callback=_minutes_as_s,
    help="Name a process that held GPU memory and ran no kernel for this many minutes (default: after_minutes "
    "under [idle_held] in the config file, else 10).",
)


HANG_AFTER = typer.Option(
    None,
    "--hang-after",
    metavar="SECONDS",
    min=0.1,
    help="Say a distributed job hangs when ranks have waited this long in a collective for others that did not "
    "arrive (default: after_seconds under [hang] in the config file, else 300).",
)


@contextlib.contextmanager
def spinner(first: str = "starting") -> Iterator[Callable[[str], None]]:
    """A one-line progress display on stderr (on a terminal only); yields what to call with what runs now."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as progress:
        task = progress.add_task(first, total=None)
        yield lambda what: progress.update(task, description=what)
