"""One wording for files that cannot be read, whatever reads them (snapshots, traces, budgets)."""

from __future__ import annotations

from pathlib import Path


def unreadable(path: str | Path, exc: BaseException) -> str:
    """'PATH: why' for an error raised while opening or reading a file the user named."""
    if isinstance(exc, FileNotFoundError):
        why = "no such file"
    elif isinstance(exc, IsADirectoryError):
        why = "is a directory"
    elif isinstance(exc, PermissionError):
        why = "permission denied"
    elif isinstance(exc, UnicodeDecodeError):
        why = "not a text file"
    else:
        why = f"cannot read: {getattr(exc, 'strerror', None) or exc}"
    return f"{path}: {why}"
