"""gputriage: why is my GPU job slow or unstable, and what to do about it.

The library API (`check`, `analyze_trace`, `run`, `monitor`, ...) lives in `gputriage.api`; it is
imported on first use, so `import gputriage` stays cheap."""

from __future__ import annotations

from typing import Any

from gputriage.inworkload.progress import step as step
from gputriage.model.version import __version__ as __version__

__all__ = [
    "analyze_memory",
    "analyze_trace",
    "bench",
    "catalog",
    "check",
    "monitor",
    "run",
    "runs",
    "show",
    "snapshot",
    "step",
    "write_html",
]


def __getattr__(name: str) -> Any:
    if name in __all__ and name != "step":
        from gputriage import api

        return getattr(api, name)
    raise AttributeError(f"module 'gputriage' has no attribute {name!r}")
