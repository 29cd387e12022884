"""The `gputriage` command."""

from __future__ import annotations

import os
import sys

import typer

from gputriage.cli import exits
from gputriage.cli.bench import bench
from gputriage.cli.check import check
from gputriage.cli.rules import rules
from gputriage.cli.run import run
from gputriage.cli.runs import runs, show
from gputriage.cli.snapshot import snapshot
from gputriage.cli.trace import trace
from gputriage.cli.watch import watch
from gputriage.model.version import __version__

app = typer.Typer(
    name="gputriage",
    help="Why is my GPU job slow or unstable, and what should I do about it — with the numbers that prove it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.command()(check)
app.command()(bench)
app.command()(snapshot)
app.command()(rules)
app.command(context_settings={"allow_interspersed_args": False})(run)
app.command()(watch)
app.command()(trace)
app.command()(runs)
app.command()(show)


def _version(value: bool) -> None:
    if value:
        print(f"gputriage {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version.")) -> None:
    pass


def main() -> None:
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
        sys.stderr.write(f"gputriage: internal error: {type(exc).__name__}: {exc} "
                         "(set GPUTRIAGE_DEBUG=1 for the traceback)\n")
        sys.exit(exits.INTERNAL)
