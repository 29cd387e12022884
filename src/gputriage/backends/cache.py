"""A small JSON cache in the user's cache directory (facts that only change when software does)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def cache_dir() -> Path:
    env = os.environ.get("GPUTRIAGE_CACHE_DIR")
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("gputriage"))


def read(name: str) -> Any:
    try:
        return json.loads((cache_dir() / name).read_text())
    except (OSError, ValueError):
        return None


def write(name: str, data: Any) -> None:
    try:
        d = cache_dir()
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".{name}.{os.getpid()}"
        tmp.write_text(json.dumps(data))
        tmp.replace(d / name)
    except OSError:
        pass  # a cache that cannot be written only costs time
