"""The workload `run` wraps: started without a shell, its stdin/stdout/stderr inherited (passed
through untouched), signals sent to gputriage forwarded to it, and — on Linux, unless asked not to
— killed with gputriage (PR_SET_PDEATHSIG), so a `kill -9` of gputriage does not leave it orphaned.

Signals: SIGTERM, SIGHUP and SIGQUIT are forwarded at once. SIGINT is forwarded at once when it
was sent to gputriage alone (a scheduler, `kill -INT`, `timeout -s INT`); a Ctrl-C at a terminal
reaches the workload directly (same process group), so then it is forwarded only if the workload
has not ended a second later.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
from typing import Any, Callable

from gputriage.model.reading import Unavailable

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
PR_SET_PDEATHSIG = 1
SIGINT_GRACE_S = 1.0


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def exit_code(returncode: int) -> int:
    """The shell's convention: 128 + N for a workload ended by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def _foreground() -> bool:
    """True when our process group owns the terminal: Ctrl-C then reaches the child directly."""
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError):
        return False


class Workload:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc

    @property
    def pid(self) -> int:
        return self.proc.pid

    @classmethod
    def start(cls, argv: list[str], env: dict[str, str], die_with_parent: bool = True,
              stdout_to_stderr: bool = False) -> Workload | Unavailable:
        """`stdout_to_stderr`: the workload writes its standard output where gputriage's standard error goes
        (so gputriage's own stdout carries only its JSON report)."""
        preexec: Callable[[], None] | None = _die_with_parent if die_with_parent and sys.platform == "linux" else None
        try:
            return cls(subprocess.Popen(argv, env=env, preexec_fn=preexec,
                                        stdout=sys.stderr.fileno() if stdout_to_stderr else None))
        except FileNotFoundError:
            return Unavailable("not_found", f"{argv[0]}: command not found")
        except PermissionError:
            return Unavailable("no_permission", f"{argv[0]}: permission denied")
        except OSError as exc:
            return Unavailable("error", f"{argv[0]}: {exc.strerror or exc}")

    def _send(self, signum: int) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signum)
            except ProcessLookupError:
                pass

    def _forward(self, signum: int, _frame: Any) -> None:
        if signum == signal.SIGINT and _foreground():
            timer = threading.Timer(SIGINT_GRACE_S, self._send, (signum,))
            timer.daemon = True
            timer.start()
        else:
            self._send(signum)

    def wait(self) -> int:
        """The workload's exit code (128 + N when signal N ended it), forwarding signals meanwhile (when
        called on the main thread)."""
        previous: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            previous = {s: signal.signal(s, self._forward) for s in FORWARDED}
        try:
            while True:
                try:
                    return exit_code(self.proc.wait())
                except KeyboardInterrupt:
                    continue
        finally:
            for s, h in previous.items():
                signal.signal(s, h)
