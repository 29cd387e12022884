"""The exporter's state as Prometheus metric families: dcgm-exporter's names, units and labels for the
counters both read (so existing dashboards work), and what only gputriage has — each GPU's bottleneck and
its share, its regime and changes of regime, the findings of the last check, the processes on each GPU, whether
py-spy can read them.

dcgm-exporter's units: utilization in % (DEV_*_UTIL), profiling activity as a ratio 0–1 (PROF_*), memory in
MiB, power in W, clocks in MHz, temperature in °C, PCIe throughput in bytes/s. Labels: gpu, UUID, device
(nvidiaN), modelName, Hostname, pci_bus_id, and the driver's version as DCGM_FI_DRIVER_VERSION (a label field of
dcgm-exporter's default counters)."""

from __future__ import annotations

from typing import Callable, Iterator, Optional

from gputriage.exporter.exposition import Family
from gputriage.model.exporter import ExporterState
from gputriage.model.sample import GpuSample
from gputriage.report.prometheus_holders import holder_families

LABELS = ["gpu", "UUID", "device", "modelName", "Hostname", "pci_bus_id", "DCGM_FI_DRIVER_VERSION"]
MIB = 1 << 20


def _scaled(field: str, factor: float) -> Callable[[GpuSample], Optional[float]]:
    """A sample's field in dcgm-exporter's unit (a percentage as a ratio, MiB/s as bytes/s); None where the
    GPU does not give it."""

    def read(g: GpuSample) -> Optional[float]:
        value = getattr(g, field)
        return value * factor if value is not None else None

    return read


# (name, help, value from a GpuSample); None values are left out (a GPU that does not give the counter)
GAUGES: tuple[tuple[str, str, Callable[[GpuSample], Optional[float]]], ...] = (
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", lambda g: g.util_pct),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", lambda g: g.mem_util_pct),
    ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", lambda g: g.sm_clock_mhz),
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", lambda g: g.temperature_c),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", lambda g: g.power_mw / 1000 if g.power_mw is not None else None),
    (
        "DCGM_FI_DEV_FB_USED",
        "Framebuffer memory used (in MiB).",
        lambda g: round(g.used_bytes / MIB) if g.used_bytes is not None else None,
    ),
    (
        "DCGM_FI_PROF_SM_ACTIVE",
        "The ratio of cycles an SM has at least 1 warp assigned.",
        _scaled("sm_active_pct", 0.01),
    ),
    ("DCGM_FI_PROF_SM_OCCUPANCY", "The ratio of number of warps resident on an SM.", _scaled("sm_occupancy_pct", 0.01)),
    (
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "Ratio of cycles the tensor (HMMA) pipe is active.",
        _scaled("tensor_active_pct", 0.01),
    ),
    (
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "Ratio of cycles the device memory interface is active sending or receiving data.",
        _scaled("dram_active_pct", 0.01),
    ),
    ("DCGM_FI_PROF_PIPE_FP64_ACTIVE", "Ratio of cycles the fp64 pipes are active.", _scaled("fp64_active_pct", 0.01)),
    ("DCGM_FI_PROF_PIPE_FP32_ACTIVE", "Ratio of cycles the fp32 pipes are active.", _scaled("fp32_active_pct", 0.01)),
    ("DCGM_FI_PROF_PIPE_FP16_ACTIVE", "Ratio of cycles the fp16 pipes are active.", _scaled("fp16_active_pct", 0.01)),
    (
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "The rate of data transmitted over the PCIe bus - including both protocol headers "
        "and data payloads - in bytes per second.",
        _scaled("pcie_tx_mib_per_s", MIB),
    ),
    (
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        "The rate of data received over the PCIe bus - including both protocol headers "
        "and data payloads - in bytes per second.",
        _scaled("pcie_rx_mib_per_s", MIB),
    ),
    (
        "DCGM_FI_PROF_NVLINK_TX_BYTES",
        "The rate of data transmitted over NVLink, not including protocol headers, in bytes per second.",
        _scaled("nvlink_tx_mib_per_s", MIB),
    ),
    (
        "DCGM_FI_PROF_NVLINK_RX_BYTES",
        "The rate of data received over NVLink, not including protocol headers, in bytes per second.",
        _scaled("nvlink_rx_mib_per_s", MIB),
    ),
)


def _labels(state: ExporterState, i: int) -> list[str]:
    static = state.gpus.get(i)
    return [
        str(i),
        (static.uuid if static else None) or "",
        f"nvidia{i}",
        (static.name if static else None) or "",
        state.hostname,
        state.pci_bus_ids.get(i, ""),
        state.driver or "",
    ]


def families(state: ExporterState) -> Iterator[Family]:
    """Every metric family of one scrape, from the state alone."""
    gpus = sorted(state.gpus)
    sample = state.sample
    for name, help_text, pick in GAUGES:
        fam = Family(name=name, help=help_text, labels=LABELS)
        for i in gpus:
            g = sample.gpu(i) if sample else None
            value = pick(g) if g is not None else None
            if value is not None:
                fam.add(_labels(state, i), float(value))
        yield fam
    free = Family(name="DCGM_FI_DEV_FB_FREE", help="Framebuffer memory free (in MiB).", labels=LABELS)
    for i in gpus:
        g = sample.gpu(i) if sample else None
        total = state.gpus[i].memory_total_bytes
        if g is not None and g.used_bytes is not None and total:
            free.add(_labels(state, i), float(round((total - g.used_bytes) / MIB)))
    yield free
    xid = Family(name="DCGM_FI_DEV_XID_ERRORS", help="Value of the last XID error encountered.", labels=LABELS)
    replay = Family(  # dcgm-exporter's counter, served under its name: no `_total`
        name="DCGM_FI_DEV_PCIE_REPLAY_COUNTER", help="Total number of PCIe retries.", type="counter", labels=LABELS
    )
    for i in gpus:
        if state.checked_s is not None:
            xid.add(_labels(state, i), float(state.xid_last.get(i, 0)))
        if i in state.pcie_replays:
            replay.add(_labels(state, i), float(state.pcie_replays[i]))
    yield xid
    yield replay
    yield from _own(state)


def _own(state: ExporterState) -> Iterator[Family]:
    share = Family(
        name="gputriage_bottleneck_share",
        help=f"Share of the last {state.window_s:g} s each GPU spent in each bottleneck, by gputriage's sampler "
        "verdict.",
        labels=["gpu", "bottleneck", "Hostname"],
    )
    current = Family(
        name="gputriage_bottleneck",
        help="1 for each GPU's bottleneck over the last window (the one with the largest share).",
        labels=["gpu", "bottleneck", "Hostname"],
    )
    for i, shares in sorted(state.bottlenecks.items()):
        for b, v in sorted(shares.items()):
            share.add([str(i), b, state.hostname], v)
        if shares:
            top = max(shares, key=lambda k: shares[k])
            current.add([str(i), top, state.hostname], 1.0)
    yield share
    yield current
    yield from _regimes(state)
    yield from _hangs(state)
    finding = Family(
        name="gputriage_finding",
        help="1 for each finding of the last check (`gputriage rules ID` says what it means and what to do).",
        labels=["id", "severity", "subject", "Hostname"],
    )
    for f in state.findings:
        finding.add([f.id, f.severity.value, f.subject, state.hostname], 1.0)
    yield finding
    checked = Family(
        name="gputriage_check_timestamp_seconds", help="When the last check ran (unix seconds).", labels=["Hostname"]
    )
    if state.checked_s is not None:
        checked.add([state.hostname], state.checked_s)
    yield checked
    yield from holder_families(state)
    pyspy = Family(
        name="gputriage_pyspy_available",
        help="1 where py-spy can read the Python stacks of the processes on the GPUs (served at /stacks, on demand), "
        "else 0 with the reason (not_installed, no_permission, ...); checked once, at the start.",
        labels=["reason", "Hostname"],
    )
    if state.pyspy_available is not None:
        pyspy.add([state.pyspy_reason, state.hostname], 1.0 if state.pyspy_available else 0.0)
    yield pyspy
    gpus = Family(name="gputriage_gpus", help="GPUs this exporter samples.", labels=["Hostname"])
    gpus.add([state.hostname], len(state.gpus))
    yield gpus


def _hangs(state: ExporterState) -> Iterator[Family]:
    """The hangs of a distributed job's ranks said so far (py-spy's dumps of the ranks on the GPUs), and the ranks
    that had not arrived at the last one."""
    total = Family(
        name="gputriage_rank_hangs_total",
        type="counter",
        help="Hangs of a distributed job said since the exporter started: ranks waited in a collective past "
        "--hang-after for ranks that did not arrive (`gputriage rules run.rank_hang`).",
        labels=["job", "Hostname"],
    )
    missing = Family(
        name="gputriage_rank_hang_missing",
        help="1 for each rank that had not arrived at the last hang said, with how long the others had waited then "
        "in gputriage_rank_hang_waited_seconds.",
        labels=["job", "rank", "Hostname"],
    )
    waited = Family(
        name="gputriage_rank_hang_waited_seconds",
        help="How long the waiting ranks had waited in a collective when the last hang was said.",
        labels=["job", "Hostname"],
    )
    jobs: dict[str, int] = {}
    for h in state.hangs:
        jobs[h.job_id or ""] = jobs.get(h.job_id or "", 0) + 1
    for job, n in sorted(jobs.items()):
        total.add([job, state.hostname], float(n))
    if state.hangs:
        last = state.hangs[-1]
        for k in last.missing:
            missing.add([last.job_id or "", str(k), state.hostname], 1.0)
        waited.add([last.job_id or "", state.hostname], last.waited_s)
    yield total
    yield missing
    yield waited


def _regimes(state: ExporterState) -> Iterator[Family]:
    """Each GPU's regime (a bottleneck its seconds have named long enough to count, as `run` counts a regime), since
    when, and how often it changed."""
    changes = Family(
        name="gputriage_regime_changes_total",
        type="counter",
        help="Changes of regime of each GPU since the exporter started: a bottleneck named for a regime's length "
        "(`gputriage rules run.regime_changed`) after another one.",
        labels=["gpu", "Hostname"],
    )
    for i, n in sorted(state.regime_changes_total.items()):
        changes.add([str(i), state.hostname], float(n))
    yield changes
    regime = Family(
        name="gputriage_regime",
        help="1 for each GPU's current regime: the bottleneck its seconds have named for a regime's length.",
        labels=["gpu", "bottleneck", "Hostname"],
    )
    since = Family(
        name="gputriage_regime_since_timestamp_seconds",
        help="When each GPU's current regime began (unix seconds).",
        labels=["gpu", "Hostname"],
    )
    for i, r in sorted(state.regimes.items()):
        regime.add([str(i), r.bottleneck, state.hostname], 1.0)
        since.add([str(i), state.hostname], r.since_s)
    yield regime
    yield since
