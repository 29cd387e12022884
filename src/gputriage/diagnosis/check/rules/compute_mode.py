"""Compute mode other than Default."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for i in ev.gpus:
        mode = ev.gpu(i, "compute_mode")
        if mode == "prohibited":
            out.append(RULE.finding({f"gpu.{i}.compute_mode": mode}, severity=Severity.critical, subject=f"gpu.{i}"))
        elif mode in ("exclusive_process", "exclusive_thread"):
            out.append(
                RULE.finding(
                    {f"gpu.{i}.compute_mode": mode},
                    severity=Severity.info,
                    subject=f"gpu.{i}",
                    say="exclusive",
                    fill={"mode": mode},
                )
            )
    return out


RULE = Rule(
    FindingSpec(
        id="gpu.compute_mode",
        step=1,
        severity=Severity.critical,
        symptom="The GPU's compute mode forbids CUDA contexts",
        cause="An administrator set the compute mode to Prohibited: no process can use the GPU",
        decision="Ask the administrator to restore the Default compute mode (gputriage never changes it)",
        commands=CHECK,
        condition="compute mode Prohibited → critical; Exclusive → info",
        needs=("gpu",),
        says={
            "exclusive": Wording(
                symptom="Compute mode is {mode}",
                cause="Only one process may hold a context on this GPU: a second one fails to start",
                decision="Expected on schedulers that isolate jobs; otherwise ask the admin to set Default",
            )
        },
    ),
    evaluate,
)
