"""Row remapping pending or failed."""

from gputriage.model.finding import Finding, Severity
from gputriage.rules.base import Evidence, Rule


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for i in ev.gpus:
        evidence = {f"gpu.{i}.remap.pending": ev.gpu(i, "remap.pending"), f"gpu.{i}.remap.failed": ev.gpu(i, "remap.failed"),
                    f"gpu.{i}.remap.uncorrectable_rows": ev.gpu(i, "remap.uncorrectable_rows")}
        if ev.gpu(i, "remap.failed"):
            out.append(RULE.finding(Severity.critical, evidence, subject=f"gpu.{i}", id="ecc.remap_failed",
                                    symptom="Row remapping failed: no spare rows left for a bad memory row",
                                    cause="The GPU memory has more failing rows than spares",
                                    decision="Take the GPU out of service and RMA it"))
        elif ev.gpu(i, "remap.pending"):
            out.append(RULE.finding(Severity.warn, evidence, subject=f"gpu.{i}"))
    return out


RULE = Rule(
    id="ecc.remap_pending", step=5,
    symptom="A memory row remap is pending",
    cause="A bad memory row was found; the remap takes effect only after a GPU reset",
    decision="Drain the GPU and reset it (or reboot) at the next opportunity",
    threshold="NVML remapped-rows pending flag set (failure flag → ecc.remap_failed, critical)",
    evaluate=evaluate,
)
