"""Start the framework probe (`gputriage.probes.torch_info`) in a child process, bounded in time.

A child keeps torch's import (a second or more) and its CUDA context out of gputriage's own
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


class TorchChild:
    def __init__(self, load_ms: float = 0.0, python: str | None = None) -> None:
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.proc = subprocess.Popen(
            [python or sys.executable, "-m", "gputriage.probes.torch_info", "--load-ms", str(load_ms)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
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

    def _next(self, deadline: float) -> str | None:
        try:
            return self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return None

    def info(self, timeout_s: float = 30.0) -> Reading:
        line = self._next(time.monotonic() + timeout_s)
        if line is None:
            self.stop()
            return Unavailable("timeout", f"the framework probe gave no answer within {timeout_s:g} s")
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            return Unavailable("error", f"framework probe said {line[:100]!r}")

    def wait_for(self, word: str, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while True:
            line = self._next(deadline)
            if line is None:
                return False
            if line == word:
                return True

    def stop(self, timeout_s: float = 5.0) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
