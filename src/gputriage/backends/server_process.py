"""The process serving a local endpoint: which one listens on the port, and its threads' names."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import psutil


def listening_pid(port: int) -> Optional[int]:
    """The process listening on this TCP port here, when it can be seen (another user's needs root)."""
    try:
        conns = psutil.net_connections(kind="tcp")
    except (psutil.AccessDenied, OSError):
        return None
    for c in conns:
        if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid:
            return int(c.pid)
    return None


def thread_name(pid: int, tid: int) -> str:
    try:
        return Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
    except OSError:
        return ""
