"""One wording for files that cannot be read, whatever reads them (snapshots, traces, budgets)."""

from __future__ import annotations

import os
from typing import Union

# a file the user named: a str or a path object (pathlib is not imported for it: the library's imports stay cheap)
FileName = Union[str, os.PathLike[str]]


def unreadable(path: FileName, exc: BaseException) -> str:
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
