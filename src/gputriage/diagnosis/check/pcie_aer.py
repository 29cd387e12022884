"""PCIe AER errors in the kernel log."""

from gputriage.diagnosis.check.base import Evidence, Rule
from gputriage.model.finding import Finding, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    aer = ev.get("kernel.aer_errors") or {}
    if aer.get("count"):
        return [
            RULE.finding(
                Severity.warn, {"aer_error_lines": aer["count"], "examples": aer.get("lines", [])[:3]}, subject="host"
            )
        ]
    return []


RULE = Rule(
    id="pcie.aer_errors",
    step=5,
    severity=Severity.warn,
    needs=("kernel_log",),
    symptom="PCIe Advanced Error Reporting logged errors",
    cause="Link-level errors (corrected or not): marginal signal integrity, risers, power; precedes link retraining "
    "and 'fallen off the bus'",
    decision="Identify the device from the lines; reseat, replace risers, check BIOS; watch the GPU's replay counter",
    condition="any 'AER: ... error' line in the kernel log",
    evaluate=evaluate,
)
