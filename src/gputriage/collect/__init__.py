"""Read-only facts, one module per area; `collect_snapshot` reads them all into a Snapshot."""

from __future__ import annotations

import time

from gputriage.backends import cache
from gputriage.backends.child import ChildProbe
from gputriage.backends.host import Host
from gputriage.backends.nvml import NvmlBackend
from gputriage.backends.torch_install import fingerprint as torch_fingerprint
from gputriage.collect import (
    container,
    cpu,
    driver,
    environment,
    filesystem,
    framework,
    health,
    kernel_log,
    memory,
    network,
    numa,
    pcie,
    power_thermal,
    processes,
    utilization,
)
from gputriage.collect.base import Context
from gputriage.model.fact import Fact
from gputriage.model.reading import Unavailable
from gputriage.model.snapshot import Snapshot
from gputriage.model.version import __version__

DEFAULT_WINDOW_S = 0.5
DEFAULT_LOAD_MS = 200.0


def collect_snapshot(nvml: NvmlBackend, host: Host, *, window_s: float = DEFAULT_WINDOW_S,
                     load_ms: float = DEFAULT_LOAD_MS, use_framework: bool = True,
                     use_cache: bool = True) -> Snapshot:
    """Read every fact of this machine.

    Two helper children start first: the link load (PCIe copies through the CUDA driver, started
    once the idle window closes, and the link read meanwhile) and, unless its answer is cached
    for this torch build and driver, the framework probe (imports torch). The CPU, page-fault and
    GPM windows run while the static facts are read; the helpers' own CPU time is subtracted.
    """
    ctx = Context(nvml=nvml, host=host)
    taken_at = time.time()
    facts: list[Fact] = list(driver.collect(ctx))

    # helpers start first (their set-up overlaps the idle window; their CPU time is subtracted)
    load_child = None
    modes = {i: nvml.call("nvmlDeviceGetComputeMode", i) for i in ctx.gpus}
    shared = [i for i, mode in modes.items() if isinstance(mode, int) and mode != 0]
    if ctx.gpus and load_ms > 0 and not shared:  # never take an exclusive-mode GPU from a job about to start
        load_child = ChildProbe("gputriage.probes.link_load", "--ms", str(load_ms), "--wait", stdin=True)
        ctx.ignore_pids.add(load_child.pid)
    framework_child, framework_key, framework_info = None, None, None
    torch_fp = torch_fingerprint() if use_framework and ctx.gpus else None
    if torch_fp is not None:
        driver_version = next((f.value for f in facts if f.name == "driver.version"), None)
        framework_key = framework.cache_key(torch_fp, driver_version, host.environ)
        cached = cache.read(framework.CACHE_NAME) if use_cache else None
        if isinstance(cached, dict) and cached.get("key") == framework_key:
            framework_info = cached
        else:
            framework_child = ChildProbe("gputriage.probes.torch_info")
            ctx.ignore_pids.add(framework_child.pid)

    t0 = host.monotonic()
    cpu_first, vm_first, gpm_first = cpu.begin(ctx), memory.begin(ctx), utilization.gpm_begin(ctx)
    bus_ids = {i: f.value for f in facts for i in ctx.gpus
               if f.name == f"gpu.{i}.pci.bus_id" and isinstance(f.value, str)}
    for collect in (pcie.collect, utilization.collect_util, processes.collect, power_thermal.collect,
                    health.collect, cpu.collect, memory.collect, filesystem.collect, container.collect,
                    network.collect, environment.collect, kernel_log.collect):
        facts += collect(ctx)
    facts += numa.collect(ctx, bus_ids)
    remaining = window_s - (host.monotonic() - t0)
    if remaining > 0:
        host.sleep(remaining)
    elapsed = host.monotonic() - t0
    facts += cpu.end(ctx, cpu_first, elapsed)
    facts += memory.end(ctx, vm_first, elapsed)
    facts += utilization.gpm_end(ctx, gpm_first)

    if load_child is None:
        idle = (f"read at idle: GPU {shared[0]} is in an exclusive or prohibited compute mode" if shared
                else "read at idle (--no-load)")
        facts += pcie.not_loaded(ctx, Unavailable("not_supported", idle))
    else:
        problem = load_child.wait_for("READY", timeout_s=15.0)
        if problem is None:
            load_child.send("GO")
            problem = load_child.wait_for("LOAD", timeout_s=5.0)
        if problem is None:
            facts += pcie.collect_loaded(ctx)
        else:
            facts += pcie.not_loaded(ctx, Unavailable("error", f"read at idle: the link load failed ({problem})"))
        load_child.stop()

    if framework_info is not None:
        facts += framework.facts_from_info(framework_info, src="torch:child (cached)")
    elif framework_child is not None:
        info = framework_child.json_line(timeout_s=60.0)
        framework_child.stop()
        if isinstance(info, dict) and framework_key is not None:
            cache.write(framework.CACHE_NAME, info | {"key": framework_key})
        facts += framework.facts_from_info(info)
    else:
        why: Unavailable
        if not use_framework:
            why = Unavailable("not_found", "skipped (--no-framework)")
        elif not ctx.gpus:
            why = Unavailable("not_found", "skipped: NVML sees no GPU")
        else:
            why = Unavailable("not_installed", "torch is not importable")
        facts += framework.facts_from_info(why)

    raw = {"nvml": dict(nvml.records), "host": dict(host.records)}
    return Snapshot(facts=tuple(facts), taken_at=taken_at, hostname=host.hostname(), tool_version=__version__, raw=raw)
