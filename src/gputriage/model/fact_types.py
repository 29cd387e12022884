"""The type of every fact, by its name: what a snapshot file's facts are checked against when it is read.

A fact's value type depends on its name (`gpu.N.temperature_c` is a whole number of degrees,
`kernel.xid_events` a list of events). A snapshot is an attachment from anywhere, so each fact is converted to
its declared type when the file is read: a wrong one (`"temperature_c": "hot"`, a count of 10**30 GPUs, an Xid
event without its code) is one error naming the fact, never a crash in the rule that reads it. None stands for
"not read" in every fact (the rules treat it as missing). A name not listed here (a fact from a newer
gputriage) is kept as it is, its strings made safe to print; no rule reads it."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Optional, TypedDict

import msgspec

Count = Annotated[int, msgspec.Meta(ge=0, le=1 << 62)]  # bytes, errors, packets, nanoseconds
Int = Annotated[int, msgspec.Meta(ge=-(1 << 62), le=1 << 62)]  # a NUMA node (-1: none), a temperature
Small = Annotated[int, msgspec.Meta(ge=0, le=1 << 20)]  # a number of GPUs, cores, nodes, a PCIe width
Number = Annotated[float, msgspec.Meta(ge=-1e18, le=1e18)]  # finite: rates, percentages, windows
Pct = Annotated[float, msgspec.Meta(ge=0, le=1e6)]  # a share in %, never negative (over 100: a sum of cores)
Version = Annotated[str, msgspec.Meta(pattern=r"^[0-9]{1,9}(\.[0-9]{1,9}){0,3}$")]  # 13.0, 9.0: rules compare them


class Xid(TypedDict):
    code: Count
    pci: str
    meaning: str
    blame: Literal["hardware", "platform", "driver", "application", "unknown"]
    text: str


class AerErrors(TypedDict):
    count: Count
    lines: list[str]


class _ProcessRequired(TypedDict):
    pid: Count


class Container(TypedDict, total=False):
    cgroup: str
    runtime: Optional[str]
    id: Optional[str]
    pod_uid: Optional[str]
    qos: Optional[str]
    pod: Optional[str]
    namespace: Optional[str]
    name: Optional[str]


class Process(_ProcessRequired, total=False):
    kinds: list[str]
    used_bytes: Optional[Count]
    name: Optional[str]
    user: Optional[str]
    visible: bool
    note: str
    cmdline: str
    age_s: Optional[Number]
    sm_util_pct: Optional[Pct]
    sm_util_window_s: Optional[Number]
    container: Optional[Container]


class Interface(TypedDict):
    rx_bytes: Count
    rx_packets: Count
    rx_errors: Count
    rx_drops: Count
    tx_bytes: Count
    tx_packets: Count
    tx_errors: Count
    tx_drops: Count


class ReadProbe(TypedDict, total=False):
    cache: Optional[str]
    queue_depth: Optional[Count]
    file_bytes: Optional[Count]


GPU: dict[str, Any] = {  # the name after gpu.N.
    "name": str,
    "uuid": str,
    "pci.bus_id": str,
    "pci.device_id": str,
    "compute_capability": Version,
    "compute_mode": str,
    "memory.total_bytes": Count,
    "memory.used_bytes": Count,
    "memory.free_bytes": Count,
    "pcie.link_gen.current": Small,
    "pcie.link_gen.max": Small,
    "pcie.link_gen.gpu_max": Small,
    "pcie.link_gen.loaded": Small,
    "pcie.link_width.current": Small,
    "pcie.link_width.max": Small,
    "pcie.link_width.loaded": Small,
    "pcie.replay_count": Count,
    "util.gpu_pct": Pct,
    "util.memory_pct": Pct,
    "gpm.graphics_active_pct": Pct,
    "gpm.sm_active_pct": Pct,
    "gpm.sm_occupancy_pct": Pct,
    "gpm.tensor_active_pct": Pct,
    "gpm.dram_bw_util_pct": Pct,
    "gpm.window_ms": Number,
    "processes": list[Process],
    "power.draw_mw": Count,
    "power.limit_enforced_mw": Count,
    "power.limit_default_mw": Count,
    "temperature_c": Int,
    "temperature.slowdown_c": Int,
    "clock.sm_mhz": Count,
    "clock.sm_max_mhz": Count,
    "clock.mem_mhz": Count,
    "performance_state": Int,
    "clock.event_reasons_mask": Count,
    "clock.event_reasons": list[str],
    "violation.power_ns": Count,
    "violation.thermal_ns": Count,
    "ecc.enabled": bool,
    "ecc.volatile_uncorrected": Count,
    "ecc.aggregate_uncorrected": Count,
    "remap.pending": bool,
    "remap.failed": bool,
    "remap.uncorrectable_rows": Count,
    "retired_pages.pending": bool,
    "persistence_mode": bool,
    "mig.enabled": bool,
    "numa_node": Int,
    "cpu_affinity": list[Count],
}

HOST: dict[str, Any] = {
    "driver.nvml": bool,
    "driver.version": str,
    "driver.nvml_version": str,
    "driver.cuda_version": Version,
    "gpu.count": Small,
    "host.cpu.count": Small,
    "host.cpu.per_core_busy_pct": list[Pct],
    "host.cpu.iowait_pct": Pct,
    "host.cpu.window_ms": Number,
    "host.cpu.max_core_busy_pct": Pct,
    "host.cpu.median_core_busy_pct": Pct,
    "host.cpu.loadavg_1m": Number,
    "host.psi.cpu.some_avg10_pct": Pct,
    "host.psi.memory.some_avg10_pct": Pct,
    "host.cgroup.cpu_limit_cores": Number,
    "host.mem.total_bytes": Count,
    "host.mem.available_bytes": Count,
    "host.swap.total_bytes": Count,
    "host.swap.used_bytes": Count,
    "host.vm.major_faults_per_s": Number,
    "host.vm.swap_in_pages_per_s": Number,
    "host.fs.cwd.path": str,
    "host.fs.cwd.device": str,
    "host.fs.cwd.mountpoint": str,
    "host.fs.cwd.fstype": str,
    "host.fs.cwd.total_bytes": Count,
    "host.fs.cwd.free_bytes": Count,
    "host.fs.cwd.seq_read_mbps": Number,
    "host.fs.cwd.rand_read_4k_iops": Number,
    "host.fs.cwd.read_probe": ReadProbe,
    "host.container.kind": str,
    "host.dev.nvidia_nodes": list[str],
    "host.shm.total_bytes": Count,
    "env.NVIDIA_VISIBLE_DEVICES": str,
    "env.CUDA_VISIBLE_DEVICES": str,
    "env.costly": dict[str, str],
    "env.set_by_engine": dict[str, str],  # of those, the ones the engine running the check set (a Ray worker's)
    "host.net.interfaces": dict[str, Interface],
    "host.numa.node_count": Small,
    "host.process.cpu_affinity": list[Count],
    "kernel.xid_events": list[Xid],
    "kernel.fallen_off_bus": Count,
    "kernel.nvrm_errors": Count,
    "kernel.aer_errors": AerErrors,
    "torch.version": str,
    "torch.cuda.build_version": Version,
    "torch.cuda.available": bool,
    "torch.cuda.arch_list": list[str],
    "torch.cuda.error": str,
    # the GPU libraries beside torch and the training frameworks installed: package, version, CUDA build ("none": CPU)
    "python.gpu_libraries": dict[str, dict[str, str]],
}

_GPU_NAME = re.compile(r"gpu\.(\d{1,7})\.(.+)")


def declared(name: str) -> Any:
    """The type a fact of this name holds (None: not a fact gputriage declares)."""
    m = _GPU_NAME.fullmatch(name)
    if m is not None and m.group(2) in GPU:
        return GPU[m.group(2)]
    return HOST.get(name)


def typed(name: str, value: Any) -> Any:
    """`value` converted to the fact's declared type (plain dicts and lists, as the rules read them); a value
    of another type is a ValueError naming the fact and what was expected. Keys a record's type does not
    declare (written by a newer gputriage) are kept as they were."""
    kind = declared(name)
    if kind is None or value is None:
        return value
    try:
        return _with_extra_keys(value, msgspec.convert(value, kind))
    except msgspec.ValidationError as exc:
        raise ValueError(f"fact {name}: {exc}") from None


def _with_extra_keys(original: Any, converted: Any) -> Any:
    if isinstance(original, dict) and isinstance(converted, dict):
        return {**original, **{k: _with_extra_keys(original.get(k), v) for k, v in converted.items()}}
    if isinstance(original, list) and isinstance(converted, list) and len(original) == len(converted):
        return [_with_extra_keys(o, c) for o, c in zip(original, converted)]
    return converted
