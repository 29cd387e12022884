"""Start one of gputriage's probe modules in a child process and read its line protocol, bounded in time.

A child keeps torch's import (a second or more) and any CUDA context out of gputriage's own
process, lets the host readings proceed meanwhile, and cannot hang `check`.
"""

from __future__ import annotations

import importlib.util
import json
import queue
import subprocess
import sys
import threading
import time

from gputriage.model.reading import Reading, Unavailable


def torch_installed() -> bool:
    return importlib.util.find_spec("torch") is not None


class ChildProbe:
    def __init__(self, module: str, *args: str, python: str | None = None, stdin: bool = False) -> None:
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.module = module
        self.proc = subprocess.Popen(
            [python or sys.executable, "-m", module, *args],
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        threading.Thread(target=self._pump, daemon=True).start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.strip())
        self._lines.put(None)

    def next_line(self, timeout_s: float) -> str | None:
        try:
            return self._lines.get(timeout=max(0.0, timeout_s))
        except queue.Empty:
            return None

    def json_line(self, timeout_s: float = 30.0) -> Reading:
        line = self.next_line(timeout_s)
        if line is None:
            self.stop(0)
            return Unavailable("timeout", f"{self.module} gave no answer within {timeout_s:g} s")
        return self.parse(self.module, line)

    @staticmethod
    def parse(module: str, line: str | None) -> Reading:
        """A child's JSON line (an Unavailable for none, or one that is not JSON)."""
        if line is None:
            return Unavailable("error", f"{module} ended without an answer")
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            return Unavailable("error", f"{module} said {line[:100]!r}")

    def send(self, line: str) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, AssertionError):
            pass

    def wait_for(self, word: str, timeout_s: float) -> str | None:
        """Wait for a line that is `word`; None when it came, else what came instead (or 'timeout')."""
        deadline = time.monotonic() + timeout_s
        while True:
            line = self.next_line(deadline - time.monotonic())
            if line is None:
                return "timeout" if self.proc.poll() is None else "exited"
            if line == word:
                return None
            if line.startswith("ERROR"):
                return line[6:]

    def stop(self, timeout_s: float = 5.0) -> None:
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
