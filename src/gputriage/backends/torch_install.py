"""Where this Python's torch lives, without importing it (an import costs seconds)."""

from __future__ import annotations

import importlib.util
import os
import sys


def fingerprint() -> str | None:
    """Identifies the installed torch build: path, version file size and mtime, and the interpreter.
    None when torch is not installed."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = list(spec.submodule_search_locations)[0]
    try:
        st = os.stat(os.path.join(root, "version.py"))
    except OSError:
        return f"{sys.executable}|{root}|?"
    return f"{sys.executable}|{root}|{st.st_size}|{st.st_mtime_ns}"
