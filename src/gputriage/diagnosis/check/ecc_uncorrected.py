"""Uncorrected ECC errors since boot."""

from gputriage.diagnosis.check.base import Evidence, Rule
from gputriage.model.finding import Finding, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for i in ev.gpus:
        vol = ev.gpu(i, "ecc.volatile_uncorrected")
        if vol:
            out.append(
                RULE.finding(
                    Severity.critical,
                    {
                        f"gpu.{i}.ecc.volatile_uncorrected": vol,
                        f"gpu.{i}.ecc.aggregate_uncorrected": ev.gpu(i, "ecc.aggregate_uncorrected"),
                    },
                    subject=f"gpu.{i}",
                )
            )
    return out


RULE = Rule(
    id="ecc.uncorrected",
    step=5,
    severity=Severity.critical,
    needs=("gpu",),
    symptom="The GPU memory had uncorrectable ECC errors since the driver loaded",
    cause="Memory cells returned corrupt data: affected jobs may have computed garbage or crashed (Xid 48/94/95)",
    decision="Drain the GPU, reset it so row remapping takes effect, and RMA if errors return",
    condition="volatile uncorrected ECC count > 0",
    evaluate=evaluate,
)
