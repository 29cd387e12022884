"""A GPU that stopped answering mid-read (GPU_IS_LOST)."""

from gputriage.diagnosis.check.base import Evidence, Rule
from gputriage.model.finding import Finding, Severity


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
                    Severity.critical, {"gpu": i, "lost_readings": len(lost), "first": lost[0]}, subject=f"gpu.{i}"
                )
            )
    return out


RULE = Rule(
    id="gpu.lost",
    step=1,
    severity=Severity.critical,
    needs=("gpu",),
    symptom="The driver reports the GPU as lost (GPU_IS_LOST)",
    cause="The GPU dropped off the PCIe bus or hung: power delivery, riser/slot, overheating or a driver fault",
    decision="Drain the node; check kernel log for Xid 79, power cabling, seating and temperatures; a reset or reboot "
    "is needed before the GPU is usable",
    condition="any NVML call on the GPU returns GPU_IS_LOST",
    evaluate=evaluate,
)
