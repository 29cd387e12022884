"""NVRM error lines other than Xids."""

from gputriage.model.finding import Finding, Severity
from gputriage.rules.base import Evidence, Rule

MIN_LINES = 1


def evaluate(ev: Evidence) -> list[Finding]:
    n = ev.get("kernel.nvrm_errors")
    if n and n >= MIN_LINES:
        return [RULE.finding(Severity.warn, {"kernel.nvrm_errors": n}, subject="host")]
    return []


RULE = Rule(
    id="kernel.nvrm_errors", step=5,
    symptom="The NVIDIA kernel driver logged errors",
    cause="Driver-level failures (RM init, firmware, memory mapping) that precede crashes or missing GPUs",
    decision="Read them (dmesg | grep NVRM); update to a known-good driver branch; collect nvidia-bug-report.sh",
    threshold=f">= {MIN_LINES} NVRM line containing 'error' or 'failed' (Xids excluded)",
    evaluate=evaluate,
)
