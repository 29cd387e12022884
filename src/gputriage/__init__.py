"""gputriage: why is my GPU job slow or unstable, and what to do about it.

The library API (`check`, `analyze_trace`, `run`, `monitor`, ...) lives in `gputriage.api`; it is
imported on first use, so `import gputriage` stays cheap."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["analyze_trace", "bench", "catalog", "check", "monitor", "run", "runs", "show", "snapshot"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from gputriage import api

        return getattr(api, name)
    raise AttributeError(f"module 'gputriage' has no attribute {name!r}")
