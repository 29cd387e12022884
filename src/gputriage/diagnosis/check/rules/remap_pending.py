"""Row remapping pending or failed."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for i in ev.gpus:
        evidence = {f"gpu.{i}.remap.{k}": ev.gpu(i, f"remap.{k}") for k in ("pending", "failed", "uncorrectable_rows")}
        if ev.gpu(i, "remap.failed"):
            out.append(FAILED.finding(evidence, severity=Severity.critical, subject=f"gpu.{i}"))
        elif ev.gpu(i, "remap.pending"):
            out.append(RULE.finding(evidence, severity=Severity.warn, subject=f"gpu.{i}"))
    return out


FAILED = FindingSpec(
    id="ecc.remap_failed",
    step=5,
    severity=Severity.critical,
    commands=CHECK,
    needs=("gpu",),
    symptom="Row remapping failed: no spare rows left for a bad memory row",
    cause="The GPU memory has more failing rows than spares",
    decision="Take the GPU out of service and RMA it",
    condition="NVML remapped-rows failure flag set",
)
RULE = Rule(
    FindingSpec(
        id="ecc.remap_pending",
        step=5,
        severity=Severity.critical,
        symptom="A memory row remap is pending",
        cause="A bad memory row was found; the remap takes effect only after a GPU reset",
        decision="Drain the GPU and reset it (or reboot) at the next opportunity",
        commands=CHECK,
        condition="NVML remapped-rows pending flag set (failure flag → ecc.remap_failed, critical)",
        needs=("gpu",),
    ),
    evaluate,
    also=(FAILED,),
)
