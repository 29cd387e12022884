"""The cores a process may use: its CPU affinity (`sched_getaffinity`, what `taskset` and a container's cpuset set),
capped by its cgroup's CPU quota (cgroup v2 `cpu.max` of its cgroup and each parent's, the lowest; v1
`cpu.cfs_quota_us` over `cpu.cfs_period_us`: man 7 cgroups, the kernel's Documentation/admin-guide/cgroup-v2.rst
"cpu.max"). Read through a `Host` so a test points it at a fixture root; the affinity only on the live machine."""

from __future__ import annotations

import os
from typing import Callable, Iterable

from gputriage.backends.cgroup import parse_proc_cgroup
from gputriage.backends.host import Host

V1_CPU = ("cpu,cpuacct", "cpu")  # the v1 hierarchies that hold the CFS quota


def affinity(pids: Iterable[int]) -> set[int] | None:
    """The cores any of the processes may run on (the union of their affinities); None where none can be read."""
    cores: set[int] = set()
    read = False
    for pid in pids:
        try:
            cores |= os.sched_getaffinity(pid)
            read = True
        except (OSError, AttributeError):  # gone, or a platform without it
            continue
    return cores if read else None


def _quota(text: object) -> float | None:
    """cpu.max's "QUOTA PERIOD" as cores; None for "max" (no limit) or what does not parse."""
    if not isinstance(text, str):
        return None
    quota, _, period = text.strip().partition(" ")
    try:
        return None if quota == "max" else int(quota) / int(period or 100000)
    except ValueError:
        return None


def cgroup_quota_cores(host: Host, pid: int) -> float | None:
    """The CPU quota of a process's cgroup as cores (the lowest of its cgroup's and its parents'); None: no quota."""
    lines = parse_proc_cgroup(str(host.read_text(f"/proc/{pid}/cgroup")))
    if "" in lines:  # v2: the unified hierarchy, limits along the path
        parts = [p for p in lines[""].split("/") if p]
        limits = []
        for depth in range(len(parts), -1, -1):
            limits.append(_quota(host.read_text("/sys/fs/cgroup/" + "/".join([*parts[:depth], "cpu.max"]))))
        found = [x for x in limits if x is not None]
        return min(found) if found else None
    for controller in V1_CPU:
        if controller not in lines:
            continue
        # its cgroup's folder, else the hierarchy's root (a container sees its own cgroup mounted there)
        own = f"/sys/fs/cgroup/{controller}{lines[controller].rstrip('/')}"
        for base in dict.fromkeys((own, f"/sys/fs/cgroup/{controller}")):
            q, p = host.read_text(f"{base}/cpu.cfs_quota_us"), host.read_text(f"{base}/cpu.cfs_period_us")
            if isinstance(q, str) and isinstance(p, str) and q.strip().lstrip("-").isdigit() and p.strip().isdigit():
                return int(q) / int(p) if int(q) > 0 and int(p) > 0 else None
    return None


def usable_cores(
    host: Host, pids: list[int], read_affinity: Callable[[Iterable[int]], set[int] | None] = affinity
) -> float | None:
    """The cores the processes may use: their affinity's count (the live machine's), capped by the first one's
    cgroup quota; None where neither is known."""
    cores = read_affinity(pids) if host.is_live else None
    quota = cgroup_quota_cores(host, pids[0]) if pids else None
    known = [x for x in (float(len(cores)) if cores else None, quota) if x is not None]
    return round(min(known), 2) if known else None
