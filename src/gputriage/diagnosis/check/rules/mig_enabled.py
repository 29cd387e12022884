"""MIG mode on: the GPU is partitioned."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    return [
        RULE.finding({f"gpu.{i}.mig.enabled": True}, severity=Severity.info, subject=f"gpu.{i}")
        for i in ev.gpus
        if ev.gpu(i, "mig.enabled") is True
    ]


RULE = Rule(
    FindingSpec(
        id="gpu.mig_enabled",
        step=1,
        severity=Severity.info,
        symptom="MIG is enabled: the GPU is split into instances",
        cause="A job sees one MIG slice, with a fraction of the SMs and memory; several NVML metrics are not supported",
        decision="Expect a slice's throughput, not the whole GPU's; size batches to the slice's memory",
        commands=CHECK,
        condition="MIG current mode enabled",
        needs=("gpu",),
    ),
    evaluate,
)
