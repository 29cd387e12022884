"""A GPU that stopped answering mid-read (GPU_IS_LOST)."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for i in ev.gpus:
        lost = [
            name
            for name in ev.snapshot.names()
            if name.startswith(f"gpu.{i}.") and (u := ev.unavailable(name)) is not None and u.reason == "gpu_lost"
        ]
        if lost:
            out.append(
                RULE.finding(
                    {"gpu": i, "lost_readings": len(lost), "first": lost[0]},
                    severity=Severity.critical,
                    subject=f"gpu.{i}",
                )
            )
    return out


RULE = Rule(
    FindingSpec(
        id="gpu.lost",
        step=1,
        severity=Severity.critical,
        symptom="The driver reports the GPU as lost (GPU_IS_LOST)",
        cause="The GPU dropped off the PCIe bus or hung: power delivery, riser/slot, overheating or a driver fault",
        decision="Drain the node; check kernel log for Xid 79, power cabling, seating and temperatures; a reset or "
        "reboot "
        "is needed before the GPU is usable",
        commands=CHECK,
        condition="any NVML call on the GPU returns GPU_IS_LOST",
        needs=("gpu",),
    ),
    evaluate,
)
