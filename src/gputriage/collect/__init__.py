"""Read-only facts, one module per area; `collect_snapshot` reads them all into a Snapshot."""

from __future__ import annotations

import time

from gputriage import __version__
from gputriage.backends.host import Host
from gputriage.backends.nvml import NvmlBackend
from gputriage.backends.torch_child import TorchChild, torch_installed
from gputriage.collect import (container, cpu, driver, environment, filesystem, framework, health, kernel_log,
                               memory, network, numa, pcie, power_thermal, processes, utilization)
from gputriage.collect.base import Context
from gputriage.model.fact import Fact
from gputriage.model.reading import Unavailable
from gputriage.model.snapshot import Snapshot

DEFAULT_WINDOW_S = 0.5
DEFAULT_LOAD_MS = 300.0


def collect_snapshot(nvml: NvmlBackend, host: Host, *, window_s: float = DEFAULT_WINDOW_S,
                     load_ms: float = DEFAULT_LOAD_MS, use_framework: bool = True) -> Snapshot:
    """Read every fact of this machine. The CPU, page-fault and GPM windows run side by side while
    the static facts are read; the framework child imports torch meanwhile, then loads the GPUs
    briefly so the PCIe link is read while it works."""
    ctx = Context(nvml=nvml, host=host)
    taken_at = time.time()
    facts: list[Fact] = list(driver.collect(ctx))

    child = None
    if use_framework and ctx.gpus and torch_installed():
        child = TorchChild(load_ms=load_ms if ctx.gpus else 0.0)
        ctx.ignore_pids.add(child.pid)

    t0 = time.monotonic()
    cpu_first, vm_first, gpm_first = cpu.begin(ctx), memory.begin(ctx), utilization.gpm_begin(ctx)

    bus_ids = {i: f.value for f in facts for i in ctx.gpus
               if f.name == f"gpu.{i}.pci.bus_id" and isinstance(f.value, str)}
    for collect in (pcie.collect, utilization.collect_util, processes.collect, power_thermal.collect,
                    health.collect, cpu.collect, memory.collect, filesystem.collect, container.collect,
                    network.collect, environment.collect, kernel_log.collect):
        facts += collect(ctx)
    facts += numa.collect(ctx, bus_ids)

    remaining = window_s - (time.monotonic() - t0)
    if remaining > 0:
        host.sleep(remaining)
    elapsed = time.monotonic() - t0
    facts += cpu.end(ctx, cpu_first, elapsed)
    facts += memory.end(ctx, vm_first, elapsed)
    facts += utilization.gpm_end(ctx, gpm_first)

    if child is None:
        if not use_framework:
            why = Unavailable("not_found", "skipped (--no-framework)")
        elif not ctx.gpus:
            why = Unavailable("not_found", "skipped: NVML sees no GPU")
        else:
            why = Unavailable("not_installed", "torch is not importable")
        facts += framework.facts_from_info(why)
        facts += pcie.not_loaded(ctx, Unavailable("not_supported", "read at idle: no torch to load the GPU"))
    else:
        info = child.info()
        facts += framework.facts_from_info(info)
        loaded = isinstance(info, dict) and info.get("available") and ctx.gpus and load_ms > 0
        if loaded and child.wait_for("LOAD", timeout_s=20.0):
            facts += pcie.collect_loaded(ctx)
        elif ctx.gpus:
            facts += pcie.not_loaded(ctx, Unavailable("not_supported", "read at idle: torch cannot use CUDA here"))
        child.stop()

    raw = {"nvml": dict(nvml.records), "host": dict(host.records)}
    return Snapshot(facts=tuple(facts), taken_at=taken_at, hostname=host.hostname(), tool_version=__version__, raw=raw)
