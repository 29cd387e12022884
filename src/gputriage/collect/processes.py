"""VRAM per process, with names and users (playbook task 5).

A PID NVML reports that this PID namespace cannot see (inside a container) is reported as such.
"""

from __future__ import annotations

from typing import Any

from gputriage.collect.base import Context, fact
from gputriage.model.fact import Fact
from gputriage.model.reading import Unavailable

CALLS = (("compute", "nvmlDeviceGetComputeRunningProcesses"), ("graphics", "nvmlDeviceGetGraphicsRunningProcesses"))


def collect(ctx: Context) -> list[Fact]:
    facts: list[Fact] = []
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
        for pid, entry in procs.items():
            info = ctx.host.process_info(pid)
            if isinstance(info, Unavailable):
                entry.update(name=None, user=None, visible=info.reason != "not_found", note=info.detail)
            else:
                entry.update(name=info["name"], user=info["user"], visible=True, cmdline=info.get("cmdline", ""))
        value = failure if (failure is not None and not procs) else sorted(procs.values(), key=lambda e: e["pid"])
        facts.append(fact(f"gpu.{i}.processes", value, "nvml:nvmlDeviceGetComputeRunningProcesses+psutil"))
    return facts
