"""PCIe AER errors in the kernel log."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    aer = ev.get("kernel.aer_errors") or {}
    if aer.get("count"):
        return [
            RULE.finding(
                {"aer_error_lines": aer["count"], "examples": aer.get("lines", [])[:3]},
                severity=Severity.warn,
                subject="host",
            )
        ]
    return []


RULE = Rule(
    FindingSpec(
        id="pcie.aer_errors",
        step=5,
        severity=Severity.warn,
        symptom="PCIe Advanced Error Reporting logged errors",
        cause="Link-level errors (corrected or not): marginal signal integrity, risers, power; precedes link "
        "retraining "
        "and 'fallen off the bus'",
        decision="Identify the device from the lines; reseat, replace risers, check BIOS; watch the GPU's replay "
        "counter",
        commands=CHECK,
        condition="any 'AER: ... error' line in the kernel log",
        needs=("kernel_log",),
    ),
    evaluate,
)
