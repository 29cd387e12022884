"""What the exporter keeps of a check: its findings, each GPU's PCI bus id, last Xid and PCIe replays."""

from __future__ import annotations

from typing import Optional

import msgspec

from gputriage.model.check import CheckReport
from gputriage.model.finding import Finding


class Checked(msgspec.Struct, kw_only=True):
    findings: list[Finding] = []
    checked_s: Optional[float] = None  # unix seconds of the check
    pci_bus_ids: dict[int, str] = {}
    xid_last: dict[int, int] = {}  # GPU -> the last Xid the kernel log names for it
    pcie_replays: dict[int, int] = {}  # GPU -> NVML's PCIe replay counter


def checked(report: CheckReport, gpus: list[int], now_s: float) -> Checked:
    """A check report, reduced to what a scrape shows."""
    facts = report.facts
    bus = {i: str(facts.get(f"gpu.{i}.pci.bus_id", "")).lower() for i in gpus}
    events = facts.get("kernel.xid_events")
    xids: dict[int, int] = {}
    for e in events if isinstance(events, list) else []:  # oldest first: the last one stays
        pci = str(e.get("pci") or "").lower() if isinstance(e, dict) else ""
        code = e.get("code") if isinstance(e, dict) else None
        for i, b in bus.items():
            if pci and pci in b and isinstance(code, int) and not isinstance(code, bool):
                xids[i] = code
    replays = {
        i: v for i in gpus if isinstance(v := facts.get(f"gpu.{i}.pcie.replay_count"), int) and not isinstance(v, bool)
    }
    return Checked(
        findings=list(report.findings), checked_s=now_s, pci_bus_ids=bus, xid_last=xids, pcie_replays=replays
    )
