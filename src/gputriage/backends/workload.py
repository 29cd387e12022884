"""The workload `run` wraps: started without a shell, its stdin/stdout/stderr inherited (passed
through untouched; with `run --metric`, its output and errors copied through gputriage, which reads
a number from the lines a pattern matches), signals sent to gputriage forwarded to it, and — on
Linux, unless asked not to — killed with gputriage (PR_SET_PDEATHSIG), so a `kill -9` of gputriage
does not leave it orphaned.

Signals: SIGTERM, SIGHUP and SIGQUIT are forwarded at once. SIGINT is forwarded at once when it
was sent to gputriage alone (a scheduler, `kill -INT`, `timeout -s INT`); a Ctrl-C at a terminal
reaches the workload directly (same process group), so then it is forwarded only if the workload
has not ended a second later.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys
import threading
import time
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


def _fd(stream: Any, default: int) -> int:
    """The stream's file descriptor; the process's own (1, 2) where the stream has none (a notebook's)."""
    try:
        return int(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return default


def exit_code(returncode: int) -> int:
    """The shell's convention: 128 + N for a workload ended by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def _foreground() -> bool:
    """True when our process group owns the terminal: Ctrl-C then reaches the child directly."""
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError):
        return False


class MetricTap:
    """Copies a stream of the workload to where it would have gone, and keeps the number the pattern's
    first group catches in each line (`run --metric`): (unix time, value). Lines end at \n or \r (a
    progress bar redraws with \r)."""

    def __init__(self, source: Any, dest_fd: int, pattern: re.Pattern[str], points: list[tuple[float, float]]) -> None:
        self.source, self.dest_fd, self.pattern, self.points = source, dest_fd, pattern, points
        self.thread = threading.Thread(target=self._copy, name="gputriage-metric", daemon=True)
        self.thread.start()

    def _copy(self) -> None:
        rest = b""
        while True:
            chunk = os.read(self.source.fileno(), 65536)
            if not chunk:
                break
            try:
                os.write(self.dest_fd, chunk)
            except OSError:
                pass  # gputriage's own output is gone (a closed pipe): keep reading, or the workload blocks
            lines = (rest + chunk).replace(b"\r", b"\n").split(b"\n")
            rest = lines.pop()[-4096:]
            now = time.time()
            for line in lines:
                self._match(line, now)
        if rest:
            self._match(rest, time.time())

    def _match(self, line: bytes, now: float) -> None:
        m = self.pattern.search(line.decode("utf-8", "replace"))
        if m is None:
            return
        try:
            self.points.append((now, float((m.group(1) if m.groups() else m.group(0)).replace(",", ""))))
        except ValueError:
            pass


class _Early:
    """Signals caught from before the workload is started (main thread only): one that arrives while it starts must
    reach it, not end gputriage alone. Kept until it exists; given back to gputriage if it cannot start."""

    def __init__(self) -> None:
        self.pending: list[int] = []
        main = threading.current_thread() is threading.main_thread()
        self.previous: dict[int, Any] = {s: signal.signal(s, self._keep) for s in FORWARDED} if main else {}

    def _keep(self, signum: int, _frame: Any) -> None:
        self.pending.append(signum)

    def give_back(self) -> None:
        """The workload did not start: the handlers in place before, and what was kept delivered to them."""
        for s, h in self.previous.items():
            signal.signal(s, h)
        for s in self.pending:
            signal.raise_signal(s)


class Workload:
    def __init__(
        self, proc: subprocess.Popen[bytes], die_with_parent: bool = True, early: _Early | None = None
    ) -> None:
        self.proc = proc
        self.die_with_parent = die_with_parent
        self.metric_points: list[tuple[float, float]] = []  # `run --metric`: (unix time, value) from its output
        self.taps: list[MetricTap] = []
        self._previous: dict[int, Any] = {}  # signal handlers in place before ours (main thread only)
        if threading.current_thread() is threading.main_thread():
            # from the moment the workload exists: a signal before `wait` must reach it, not end gputriage alone
            before: dict[int, Any] = {s: signal.signal(s, self._forward) for s in FORWARDED}
            self._previous = early.previous if early is not None and early.previous else before
        for signum in early.pending if early is not None else ():
            self._forward(signum, None)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @classmethod
    def start(
        cls,
        argv: list[str],
        env: dict[str, str],
        die_with_parent: bool = True,
        stdout_to_stderr: bool = False,
        metric: re.Pattern[str] | None = None,
    ) -> Workload | Unavailable:
        """`stdout_to_stderr`: the workload writes its standard output where gputriage's standard error goes
        (so gputriage's own stdout carries only its JSON report). `metric`: its output and errors go through
        gputriage, which keeps the numbers the pattern catches in them."""
        preexec: Callable[[], None] | None = _die_with_parent if die_with_parent and sys.platform == "linux" else None
        out_fd = _fd(sys.stderr, 2) if stdout_to_stderr else _fd(sys.stdout, 1)
        early: _Early | None = _Early()
        try:
            if metric is not None:
                w = cls(
                    subprocess.Popen(argv, env=env, preexec_fn=preexec, stdout=subprocess.PIPE, stderr=subprocess.PIPE),
                    die_with_parent,
                    early,
                )
                w.taps = [
                    MetricTap(w.proc.stdout, out_fd, metric, w.metric_points),
                    MetricTap(w.proc.stderr, _fd(sys.stderr, 2), metric, w.metric_points),
                ]
            else:
                w = cls(
                    subprocess.Popen(argv, env=env, preexec_fn=preexec, stdout=out_fd if stdout_to_stderr else None),
                    die_with_parent,
                    early,
                )
            early = None  # the workload's handlers took over
            return w
        except FileNotFoundError:
            return Unavailable("not_found", f"{argv[0]}: command not found")
        except IsADirectoryError:
            return Unavailable("no_permission", f"{argv[0]}: is a directory")
        except PermissionError:
            why = "is a directory" if os.path.isdir(argv[0]) else "permission denied"
            return Unavailable("no_permission", f"{argv[0]}: {why}")
        except OSError as exc:
            return Unavailable("error", f"{argv[0]}: {exc.strerror or exc}")
        except ValueError as exc:  # a NUL byte in an argument or the environment
            return Unavailable("error", f"{argv[0]!r}: {exc}")
        finally:
            if early is not None:
                early.give_back()

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

    def restore_signals(self) -> None:
        """Give the signals back to the handlers in place before the workload started (once)."""
        for s, h in self._previous.items():
            signal.signal(s, h)
        self._previous = {}

    def close(self, grace_s: float = 5.0) -> None:
        """The end of the session that started it: the signal handlers restored and, when gputriage is leaving
        while the workload still runs (an error of its own) and the workload was to die with it, SIGTERM, then
        SIGKILL after `grace_s`."""
        self.restore_signals()
        if self.proc.poll() is None and self.die_with_parent:
            self._send(signal.SIGTERM)
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def wait(self) -> int:
        """The workload's exit code (128 + N when signal N ended it); signals sent to gputriage reach it from
        its start (when started on the main thread)."""
        try:
            while True:
                try:
                    code = exit_code(self.proc.wait())
                    for tap in self.taps:  # what the workload wrote last, up to its pipes' end
                        tap.thread.join(timeout=5)
                    self.metric_points.sort()
                    return code
                except KeyboardInterrupt:
                    continue
        finally:
            self.restore_signals()
