"""External commands: argv only (never a shell), always with a time limit."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

from gputriage.model.reading import Reading, Unavailable


@dataclass(frozen=True)
class CommandResult:
    returncode: int
    stdout: str
    stderr: str


def run_command(argv: list[str], timeout_s: float = 5.0) -> Reading:
    """Run `argv`; a `CommandResult`, or `Unavailable` (not_installed, no_permission, timeout, error)."""
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL, errors="replace"
        )
    except FileNotFoundError:
        return Unavailable("not_installed", f"{argv[0]} not found")
    except PermissionError as exc:
        return Unavailable("no_permission", f"{argv[0]}: {exc}")
    except subprocess.TimeoutExpired:
        return Unavailable("timeout", f"{argv[0]} did not finish within {timeout_s:g} s")
    except OSError as exc:
        return Unavailable("error", f"{argv[0]}: {exc}")
    return CommandResult(proc.returncode, proc.stdout, proc.stderr)
