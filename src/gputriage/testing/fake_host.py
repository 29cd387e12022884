"""A host rooted at a folder the test fills, with successive contents for windowed files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gputriage.backends.host import Host, environ_values
from gputriage.model.reading import Reading, Unavailable


class FakeHost(Host):
    """Files come from `files` ({path: text, or [text, text, ...] for successive reads}), else the root."""

    def __init__(
        self,
        root: str | Path,
        files: dict[str, Any] | None = None,
        environ: dict[str, str] | None = None,
        cwd: str = "/work",
        kernel_log: Reading | None = None,
        affinity: list[int] | None = None,
        statvfs: dict[str, dict[str, int]] | None = None,
    ) -> None:
        super().__init__(root, environ=environ or {}, cwd=cwd)
        self.files = dict(files or {})
        self._reads: dict[str, int] = {}
        self._kernel_log = kernel_log
        self._affinity = affinity
        self._statvfs = statvfs or {}
        self._clock = 0.0

    def read_text(self, path: str, limit: int = 1 << 20) -> Reading:
        if path in self.files:
            value = self.files[path]
            if isinstance(value, Unavailable):
                return value
            if isinstance(value, list):
                n = self._reads.get(path, 0)
                self._reads[path] = n + 1
                value = value[min(n, len(value) - 1)]
            self.records[path] = value
            return value
        return super().read_text(path, limit)

    def process_environ(self, pid: int, names: tuple[str, ...]) -> Reading:
        """From `files` ("/proc/PID/environ": NUL-separated text) where given, else the root."""
        value = self.files.get(f"/proc/{pid}/environ")
        if isinstance(value, (str, Unavailable)):
            return value if isinstance(value, Unavailable) else environ_values(value.encode(), names)
        return super().process_environ(pid, names)

    def kernel_log(self) -> Reading:
        if self._kernel_log is not None:
            return self._kernel_log
        return super().kernel_log()

    def affinity(self) -> Reading:
        return self._affinity if self._affinity is not None else super().affinity()

    def statvfs(self, path: str) -> Reading:
        if path in self._statvfs:
            return self._statvfs[path]
        return Unavailable("not_found", path)

    def hostname(self) -> str:
        return "fixture"

    def sleep(self, seconds: float) -> None:
        self._clock += seconds

    def monotonic(self) -> float:
        return self._clock
