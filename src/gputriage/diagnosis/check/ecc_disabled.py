"""ECC supported but disabled."""

from gputriage.diagnosis.check.base import Evidence, Rule
from gputriage.model.finding import Finding, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    return [
        RULE.finding(Severity.info, {f"gpu.{i}.ecc.enabled": False}, subject=f"gpu.{i}")
        for i in ev.gpus
        if ev.gpu(i, "ecc.enabled") is False
    ]


RULE = Rule(
    id="ecc.disabled",
    step=5,
    severity=Severity.info,
    needs=("gpu",),
    symptom="ECC is supported but disabled",
    cause="Memory errors go undetected: silent corruption instead of a clean failure (a little more memory and "
    "bandwidth in exchange)",
    decision="Enable ECC on training and production nodes (admin, needs a reboot) unless the trade-off is deliberate",
    condition="ECC mode readable and off",
    evaluate=evaluate,
)
