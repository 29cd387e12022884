"""Read-only facts, one module per area; `collect_snapshot` reads them all into a Snapshot."""

from __future__ import annotations

import time

from gputriage.backends.child import ChildProbe
from gputriage.backends.host import Host
from gputriage.backends.nvml import NvmlBackend
from gputriage.collect import (
    container,
    cpu,
    driver,
    environment,
    filesystem,
    framework,
    gpu_libraries,
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


def collect_snapshot(
    nvml: NvmlBackend,
    host: Host,
    *,
    window_s: float = DEFAULT_WINDOW_S,
    load_ms: float = DEFAULT_LOAD_MS,
    use_framework: bool = True,
    use_cache: bool = True,
) -> Snapshot:
    """Read every fact of this machine.

    Two helper children start first: the framework probe (imports torch), unless its answer is cached
    for this torch build and driver, before NVML starts when the driver's version can be read without
    it; and the link load (PCIe copies through the CUDA driver, started once the idle window closes,
    and the link read meanwhile). The CPU, page-fault and GPM windows run while the static facts are
    read; the helpers' own CPU time is subtracted. The framework probe is waited for only briefly
    (`collect.framework`); `use_cache=False` waits for it.
    """
    ctx = Context(nvml=nvml, host=host)
    taken_at = time.time()
    torch_probe = framework.FrameworkProbe(host, use_cache=use_cache) if use_framework else None
    early = torch_probe.early_driver() if torch_probe is not None else None
    if torch_probe is not None and early is not None:
        torch_probe.start(early)  # the import overlaps NVML's start as well
    facts: list[Fact] = list(driver.collect(ctx))

    # helpers start first (their set-up overlaps the idle window; their CPU time is subtracted)
    load_child = None
    modes = {i: nvml.call("nvmlDeviceGetComputeMode", i) for i in ctx.gpus}
    shared = [i for i, mode in modes.items() if isinstance(mode, int) and mode != 0]
    if ctx.gpus and load_ms > 0 and not shared:  # never take an exclusive-mode GPU from a job about to start
        load_child = ChildProbe("gputriage.probes.link_load", "--ms", str(load_ms), "--wait", stdin=True)
        ctx.ignore_pids.add(load_child.pid)
    if torch_probe is not None and not ctx.gpus:
        torch_probe.cancel()  # no GPU for torch to use: its version, not its CUDA
    elif torch_probe is not None:
        torch_probe.start(early or next((f.value for f in facts if f.name == "driver.version"), None))
        if torch_probe.pid is not None:
            ctx.ignore_pids.add(torch_probe.pid)

    t0 = host.monotonic()
    cpu_first, vm_first, gpm_first = cpu.begin(ctx), memory.begin(ctx), utilization.gpm_begin(ctx)
    bus_ids = {
        i: f.value for f in facts for i in ctx.gpus if f.name == f"gpu.{i}.pci.bus_id" and isinstance(f.value, str)
    }
    for collect in (
        pcie.collect,
        utilization.collect_util,
        processes.collect,
        power_thermal.collect,
        health.collect,
        cpu.collect,
        memory.collect,
        filesystem.collect,
        container.collect,
        network.collect,
        environment.collect,
        kernel_log.collect,
    ):
        facts += collect(ctx)
    facts += numa.collect(ctx, bus_ids)
    if use_framework:  # the libraries beside torch, from their install (read while the windows run)
        facts += gpu_libraries.collect(ctx)
    remaining = window_s - (host.monotonic() - t0)
    if remaining > 0:
        host.sleep(remaining)
    elapsed = host.monotonic() - t0
    facts += cpu.end(ctx, cpu_first, elapsed)
    facts += memory.end(ctx, vm_first, elapsed)
    facts += utilization.gpm_end(ctx, gpm_first)

    if load_child is None:
        idle = (
            f"read at idle: GPU {shared[0]} is in an exclusive or prohibited compute mode"
            if shared
            else "read at idle (--no-load)"
        )
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

    if torch_probe is None:
        facts += framework.facts_from_info(Unavailable("not_found", "not probed (--no-framework)"))
    elif ctx.gpus:
        facts += torch_probe.facts()
    else:  # the version the install says, nothing of CUDA
        facts += framework.unprobed(Unavailable("not_found", "not probed: NVML sees no GPU"))

    raw = {"nvml": dict(nvml.records), "host": dict(host.records)}
    return Snapshot(facts=tuple(facts), taken_at=taken_at, hostname=host.hostname(), tool_version=__version__, raw=raw)
