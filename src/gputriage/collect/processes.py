"""Who holds each GPU (playbook task 5): per process, the VRAM it holds, the share of time its kernels ran
(NVML's per-process utilization over the last seconds the driver keeps), its name, user and age, and its
container and Kubernetes pod (`backends.cgroup`).

A PID NVML reports that this PID namespace cannot see (inside a container) is reported as such.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec

from gputriage.backends.cgroup import owner
from gputriage.backends.nvml_queries import process_sm_util
from gputriage.collect.base import Context, fact
from gputriage.model.fact import Fact
from gputriage.model.reading import Unavailable

CALLS = (("compute", "nvmlDeviceGetComputeRunningProcesses"), ("graphics", "nvmlDeviceGetGraphicsRunningProcesses"))
# How far back NVML is asked for each process's utilization. The driver answers with one sample per process that
# ran a kernel since the time asked, its SM share over that span, and nothing for a process that ran none; it
# keeps about 14 s of 200 ms samples (H200, driver 580: 71 GPU-Util samples spanning 14.0 s), so 10 s is inside
# what it holds.
UTIL_LOOKBACK_S = 10.0


def collect(ctx: Context, now_s: float | None = None) -> list[Fact]:
    """`now_s`: the unix time the utilization window ends (default: now)."""
    facts: list[Fact] = []
    since_us = int(((now_s if now_s is not None else time.time()) - UTIL_LOOKBACK_S) * 1e6)
    for i in ctx.gpus:
        procs: dict[int, dict[str, Any]] = {}
        failure: Unavailable | None = None
        for kind, fn in CALLS:
            listed = ctx.nvml.call(fn, i)
            if isinstance(listed, Unavailable):
                failure = failure or listed
                continue
            for p in listed:
                pid = int(p["pid"])
                if pid in ctx.ignore_pids:
                    continue
                used = p.get("usedGpuMemory")
                # NVML reports "not available" as a huge sentinel (NVML_VALUE_NOT_AVAILABLE)
                used_bytes = int(used) if used is not None and int(used) < 1 << 62 else None
                entry = procs.setdefault(pid, {"pid": pid, "kinds": [], "used_bytes": used_bytes})
                entry["kinds"].append(kind)
        util = process_sm_util(ctx.nvml, i, since_us) if procs else None
        for pid, entry in procs.items():
            entry.update(_owner_fields(ctx, pid))
            if util is not None:  # a process with no sample ran no kernel in the window
                entry.update(sm_util_pct=util[0].get(pid, 0.0), sm_util_window_s=UTIL_LOOKBACK_S)
        value = failure if (failure is not None and not procs) else sorted(procs.values(), key=lambda e: e["pid"])
        facts.append(
            fact(
                f"gpu.{i}.processes",
                value,
                "nvml:nvmlDeviceGetComputeRunningProcesses+nvmlDeviceGetProcessUtilization+psutil+/proc/PID/cgroup",
            )
        )
    return facts


def _owner_fields(ctx: Context, pid: int) -> dict[str, Any]:
    o = owner(ctx.host, pid)
    if not o.visible or o.note:
        return {"name": None, "user": None, "visible": o.visible, "note": o.note}
    fields: dict[str, Any] = {
        "name": o.name or "",
        "user": o.user or "",
        "visible": True,
        "cmdline": o.cmdline or "",
        "age_s": o.age_s,
    }
    if o.container is not None:
        fields["container"] = msgspec.to_builtins(o.container)
    return fields
