"""Kernel log: Xid events with their meaning and blame, fallen-off-the-bus, NVRM errors, PCIe AER (task 12)."""

from __future__ import annotations

import re
from typing import Any

from gputriage.collect.base import Context, fact
from gputriage.model.fact import Fact
from gputriage.model.reading import Unavailable

# code → (meaning, blame: hardware | driver | application | platform)
# From NVIDIA's "Xid Errors" catalog (docs.nvidia.com/deploy/xid-errors).
XID_CATALOG: dict[int, tuple[str, str]] = {
    8: ("GPU stopped processing (timeout)", "driver"),
    13: ("Graphics engine exception (often an out-of-bounds access in a kernel)", "application"),
    31: ("GPU memory page fault (illegal address in a kernel)", "application"),
    32: ("Invalid or corrupted push buffer stream (often PCIe)", "platform"),
    38: ("Driver firmware error", "driver"),
    43: ("GPU stopped processing: a user application faulted", "application"),
    45: ("Preemptive cleanup after earlier errors or a killed process", "application"),
    48: ("Double-bit ECC error (uncorrectable memory error)", "hardware"),
    56: ("Display engine error", "driver"),
    57: ("Error programming video memory interface", "hardware"),
    61: ("Internal micro-controller breakpoint/warning", "driver"),
    62: ("Internal micro-controller halt", "hardware"),
    63: ("ECC page retirement or row-remapping recorded", "hardware"),
    64: ("ECC page retirement or row-remapping recording failure", "hardware"),
    68: ("Video decoder (NVDEC) exception", "driver"),
    69: ("Graphics engine class error", "driver"),
    74: ("NVLink error", "hardware"),
    79: ("GPU has fallen off the bus", "platform"),
    92: ("High single-bit ECC error rate", "hardware"),
    94: ("Contained ECC error (the application using the memory was stopped)", "hardware"),
    95: ("Uncontained ECC error (GPU reset required)", "hardware"),
    109: ("Context switch timeout", "driver"),
    119: ("GSP RPC timeout", "driver"),
    120: ("GSP error", "driver"),
    121: ("C2C link corrected error", "hardware"),
    140: ("Unrecovered ECC error", "hardware"),
    143: ("GPU initialization failure", "hardware"),
    154: ("GPU recovery action changed (reset or reboot required)", "hardware"),
}

XID_RE = re.compile(r"NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)\): (\d+),\s*(.*)")
AER_RE = re.compile(r"AER: .*(error|Error)")


def parse(text: str) -> dict[str, Any]:
    xids: list[dict[str, Any]] = []
    fallen = nvrm = aer = 0
    aer_lines: list[str] = []
    for line in text.splitlines():
        m = XID_RE.search(line)
        if m:
            code = int(m.group(2))
            meaning, blame = XID_CATALOG.get(code, ("unlisted Xid (see NVIDIA's Xid catalog)", "unknown"))
            xids.append(
                {"code": code, "pci": m.group(1).lower(), "meaning": meaning, "blame": blame, "text": m.group(3)[:160]}
            )
        if "fallen off the bus" in line:
            fallen += 1
        if "NVRM:" in line and not m and ("error" in line.lower() or "failed" in line.lower()):
            nvrm += 1
        if AER_RE.search(line):
            aer += 1
            if len(aer_lines) < 5:
                aer_lines.append(line.strip()[:200])
    return {"xids": xids, "fallen_off_bus": fallen, "nvrm_errors": nvrm, "aer_errors": aer, "aer_lines": aer_lines}


def collect(ctx: Context) -> list[Fact]:
    text = ctx.host.kernel_log()
    src = "kernel:dmesg"
    if isinstance(text, Unavailable):
        return [fact(f"kernel.{k}", text, src) for k in ("xid_events", "fallen_off_bus", "nvrm_errors", "aer_errors")]
    parsed = parse(text)
    return [
        fact("kernel.xid_events", parsed["xids"], src),
        fact("kernel.fallen_off_bus", parsed["fallen_off_bus"], src),
        fact("kernel.nvrm_errors", parsed["nvrm_errors"], src),
        fact("kernel.aer_errors", {"count": parsed["aer_errors"], "lines": parsed["aer_lines"]}, src),
    ]
