"""ECC supported but disabled."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    return [
        RULE.finding({f"gpu.{i}.ecc.enabled": False}, severity=Severity.info, subject=f"gpu.{i}")
        for i in ev.gpus
        if ev.gpu(i, "ecc.enabled") is False
    ]


RULE = Rule(
    FindingSpec(
        id="ecc.disabled",
        step=5,
        severity=Severity.info,
        symptom="ECC is supported but disabled",
        cause="Memory errors go undetected: silent corruption instead of a clean failure (a little more memory and "
        "bandwidth in exchange)",
        decision="Enable ECC on training and production nodes (admin, needs a reboot) unless the trade-off is "
        "deliberate",
        commands=CHECK,
        condition="ECC mode readable and off",
        needs=("gpu",),
    ),
    evaluate,
)
