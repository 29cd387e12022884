"""What `gputriage exporter` serves at a scrape: the sampler's last sample per GPU, each GPU's bottleneck
shares over the last minute and its regime, the processes on each GPU, and the findings of the last check —
gathered by its threads, so that a scrape only reads this."""

from __future__ import annotations

from typing import Optional

import msgspec

from gputriage.model.finding import Finding
from gputriage.model.live_regime import LiveRegime, RegimeChange
from gputriage.model.owner import ProcessOwner
from gputriage.model.run import GpuStatic
from gputriage.model.sample import GpuProcess, HangEvent, Sample


class HeldProcess(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A process holding a GPU, as a scrape serves it: what it holds, its share of the GPU's time, how long it has
    held memory with no kernel, and who it is."""

    gpu: int
    pid: int
    used_bytes: Optional[int] = None
    sm_util_pct: Optional[float] = None  # NVML per-process utilization since the previous reading
    idle_s: float = 0.0  # how long it has held memory and run no kernel, up to now (0 while it computes)
    idle_held: bool = False  # held long enough, with enough memory, to count as holding the GPU idle
    idle_gpu_hours: float = 0.0  # the GPU-hours that idle stretch kept from use (its share of the GPU)
    owner: Optional[ProcessOwner] = None


class ExporterState(msgspec.Struct, kw_only=True):
    hostname: str = ""
    driver: Optional[str] = None
    gpus: dict[int, GpuStatic] = {}
    pci_bus_ids: dict[int, str] = {}
    sample: Optional[Sample] = None  # the sampler's last
    bottlenecks: dict[int, dict[str, float]] = {}  # GPU -> bottleneck -> share of the window
    window_s: float = 60.0
    processes: list[GpuProcess] = []
    findings: list[Finding] = []  # of the last check
    checked_s: Optional[float] = None  # unix seconds of the last check
    xid_last: dict[int, int] = {}  # GPU -> the last Xid the kernel log names for it (from the last check)
    pcie_replays: dict[int, int] = {}  # GPU -> NVML's PCIe replay counter (from the last check)
    holders: list[HeldProcess] = []  # every process on the GPUs, each named and with its share of their time
    price_per_gpu_hour: Optional[float] = None  # what a GPU-hour costs (the config file's [cost], or --price)
    currency: str = "USD"
    regimes: dict[int, LiveRegime] = {}  # GPU -> its regime, where one is known yet
    regime_changes: list[RegimeChange] = []  # the last few, oldest first
    regime_changes_total: dict[int, int] = {}  # GPU -> its changes of regime since the exporter started
    pyspy_available: Optional[bool] = None  # py-spy can read the processes on the GPUs (None: not checked)
    pyspy_reason: str = ""  # why it cannot (Unavailable's reason: not_installed, no_permission, ...)
    hangs: list[HangEvent] = []  # the last hangs of a distributed job's ranks on these GPUs, oldest first
