"""Where this Python's torch lives, without importing it (an import costs seconds)."""

from __future__ import annotations

import ast
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


def build(root: str | None = None) -> dict[str, str | None] | None:
    """The installed torch's version and the CUDA (or ROCm) it was built for, read from its `version.py` without
    importing it (an import costs seconds); None when torch is not installed or the file cannot be read. `root`:
    the torch package's folder (default: the one this Python would import)."""
    if root is None:
        spec = importlib.util.find_spec("torch")
        if spec is None or not spec.submodule_search_locations:
            return None
        root = list(spec.submodule_search_locations)[0]
    path = os.path.join(root, "version.py")
    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(64 * 1024))
    except (OSError, SyntaxError, ValueError):
        return None
    found: dict[str, str | None] = {}
    for node in tree.body:
        target = (
            node.targets[0]
            if isinstance(node, ast.Assign) and len(node.targets) == 1
            else node.target
            if isinstance(node, ast.AnnAssign)
            else None
        )
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if (
            isinstance(target, ast.Name)
            and isinstance(value, ast.Constant)
            and (value.value is None or isinstance(value.value, str))
        ):
            found[target.id] = value.value
    version = found.get("__version__")
    if not version:
        return None
    return {"version": version, "cuda_build": found.get("cuda"), "hip_build": found.get("hip")}
