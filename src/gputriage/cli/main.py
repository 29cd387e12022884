"""The `gputriage` command."""

from __future__ import annotations

import codecs
import functools
import os
import sys
from typing import Callable

import typer

from gputriage.cli import exits
from gputriage.cli.baseline import baseline_app, diff
from gputriage.cli.bench import bench
from gputriage.cli.check import check
from gputriage.cli.checklist import checklist
from gputriage.cli.common import natural_help
from gputriage.cli.exporter import exporter
from gputriage.cli.fleet import fleet_app
from gputriage.cli.join import join
from gputriage.cli.load import load
from gputriage.cli.memory import memory
from gputriage.cli.profile import profile
from gputriage.cli.report import report
from gputriage.cli.rules import rules
from gputriage.cli.run import run
from gputriage.cli.runs import runs, show
from gputriage.cli.snapshot import snapshot
from gputriage.cli.trace import trace
from gputriage.cli.watch import watch
from gputriage.model.safe_text import safe_text
from gputriage.model.version import __version__

app = typer.Typer(
    name="gputriage",
    help="Why is my GPU job slow or unstable, and what should I do about it — with the numbers that prove it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _pipe_safe(command: Callable[..., None]) -> Callable[..., None]:
    """A reader that stops early (`gputriage rules | head`) is not an error: stop writing, exit 0."""

    @functools.wraps(command)
    def wrapped(*args: object, **kwargs: object) -> None:
        try:
            command(*args, **kwargs)
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise typer.Exit(exits.OK) from None

    return wrapped


for _command in (
    check,
    bench,
    snapshot,
    rules,
    watch,
    trace,
    memory,
    runs,
    show,
    diff,
    checklist,
    report,
    load,
    exporter,
    profile,
    join,
):
    app.command()(_pipe_safe(_command))
app.add_typer(baseline_app, name="baseline")
app.add_typer(fleet_app, name="fleet")
app.command(context_settings={"allow_interspersed_args": False})(_pipe_safe(run))
natural_help(app)


def _version(value: bool) -> None:
    if value:
        print(f"gputriage {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    pass


# what the terminal renderers draw, for a terminal or file that cannot take UTF-8 (LANG=C, latin-1)
ASCII = {
    "█": "#",
    "▁": "_",
    "▂": "_",
    "▃": "-",
    "▄": "-",
    "▅": "=",
    "▆": "=",
    "▇": "#",
    "·": ".",
    "→": "->",
    "↔": "<->",
    "µ": "u",
    "×": "x",
    "–": "-",
    "—": "--",
    "…": "...",
    "≥": ">=",
    "≤": "<=",
    "°": " deg",
    "╭": "+",
    "╮": "+",
    "╰": "+",
    "╯": "+",
    "─": "-",
    "│": "|",
    "⠋": "-",
    "⠙": "\\",
    "⠹": "|",
    "⠸": "/",
}


def _ascii(err: UnicodeError) -> tuple[str, int]:
    if not isinstance(err, UnicodeEncodeError):
        raise err
    return "".join(ASCII.get(ch, "?") for ch in err.object[err.start : err.end]), err.end


def _safe_streams() -> None:
    """Where stdout or stderr cannot encode UTF-8, draw ASCII instead of failing on the first glyph."""
    codecs.register_error("gputriage-ascii", _ascii)
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
        if encoding not in ("utf8", "utf16", "utf32") and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="gputriage-ascii")


def main() -> None:
    _safe_streams()
    try:
        app(standalone_mode=True)
    except KeyboardInterrupt:
        sys.stderr.write("gputriage: interrupted\n")
        sys.exit(exits.INTERRUPTED)
    except SystemExit:
        raise
    except Exception as exc:  # never a traceback for the user; GPUTRIAGE_DEBUG=1 shows it
        if os.environ.get("GPUTRIAGE_DEBUG"):
            raise
        sys.stderr.write(
            f"gputriage: internal error: {type(exc).__name__}: {safe_text(exc, 2000)} "
            "(set GPUTRIAGE_DEBUG=1 for the traceback)\n"
        )
        sys.exit(exits.INTERNAL)
