"""Uncorrected ECC errors since boot."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for i in ev.gpus:
        vol = ev.gpu(i, "ecc.volatile_uncorrected")
        if vol:
            out.append(
                RULE.finding(
                    {
                        f"gpu.{i}.ecc.volatile_uncorrected": vol,
                        f"gpu.{i}.ecc.aggregate_uncorrected": ev.gpu(i, "ecc.aggregate_uncorrected"),
                    },
                    severity=Severity.critical,
                    subject=f"gpu.{i}",
                )
            )
    return out


RULE = Rule(
    FindingSpec(
        id="ecc.uncorrected",
        step=5,
        severity=Severity.critical,
        symptom="The GPU memory had uncorrectable ECC errors since the driver loaded",
        cause="Memory cells returned corrupt data: affected jobs may have computed garbage or crashed (Xid 48/94/95)",
        decision="Drain the GPU, reset it so row remapping takes effect, and RMA if errors return",
        commands=CHECK,
        condition="volatile uncorrected ECC count > 0",
        needs=("gpu",),
    ),
    evaluate,
)
