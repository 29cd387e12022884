"""NVRM error lines other than Xids."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold

MIN_LINES = Threshold(
    "min_lines", 1, "lines", "NVRM error lines worth a finding", "GPU triage playbook, task 12 (dmesg)"
)


def evaluate(ev: Evidence) -> list[Finding]:
    n = ev.get("kernel.nvrm_errors")
    if n and n >= MIN_LINES.value:
        return [RULE.finding({"kernel.nvrm_errors": n}, severity=Severity.warn, subject="host")]
    return []


RULE = Rule(
    FindingSpec(
        id="kernel.nvrm_errors",
        step=5,
        severity=Severity.warn,
        symptom="The NVIDIA kernel driver logged errors",
        cause="Driver-level failures (RM init, firmware, memory mapping) that precede crashes or missing GPUs",
        decision="Read them (dmesg | grep NVRM); update to a known-good driver branch; collect nvidia-bug-report.sh",
        commands=CHECK,
        condition=">= {min_lines:g} NVRM line containing 'error' or 'failed' (Xids excluded)",
        thresholds=(MIN_LINES,),
        needs=("kernel_log",),
    ),
    evaluate,
)
