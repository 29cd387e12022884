"""What `gputriage exporter` serves at a scrape: the sampler's last sample per GPU, each GPU's bottleneck
shares over the last minute, the processes on each GPU, and the findings of the last check — gathered by
its threads, so that a scrape only reads this."""

from __future__ import annotations

from typing import Optional

import msgspec

from gputriage.model.finding import Finding
from gputriage.model.run import GpuStatic
from gputriage.model.sample import GpuProcess, Sample


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
