"""The process serving a local endpoint: which one listens on the port, and its threads' names; and how busy
this machine's CPUs are (a server beside the load generator competes with it)."""

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


def machine_cpu() -> tuple[Optional[float], int]:
    """This machine's CPU time spent busy since boot, all cores (seconds in user, nice, system and interrupts:
    not idle, not waiting on I/O, not stolen by a hypervisor), and its number of cores."""
    try:
        t = psutil.cpu_times()
    except (OSError, RuntimeError):
        return None, 0
    busy = t.user + t.system + sum(getattr(t, k, 0.0) for k in ("nice", "irq", "softirq"))
    return busy, psutil.cpu_count() or 0
