"""NVRM error lines other than Xids."""

from gputriage.diagnosis.check.base import Evidence, Rule
from gputriage.model.finding import Finding, Severity, Threshold

MIN_LINES = Threshold(
    "min_lines", 1, "lines", "NVRM error lines worth a finding", "GPU triage playbook, task 12 (dmesg)"
)


def evaluate(ev: Evidence) -> list[Finding]:
    n = ev.get("kernel.nvrm_errors")
    if n and n >= MIN_LINES.value:
        return [RULE.finding(Severity.warn, {"kernel.nvrm_errors": n}, subject="host")]
    return []


RULE = Rule(
    id="kernel.nvrm_errors",
    step=5,
    severity=Severity.warn,
    needs=("kernel_log",),
    symptom="The NVIDIA kernel driver logged errors",
    cause="Driver-level failures (RM init, firmware, memory mapping) that precede crashes or missing GPUs",
    decision="Read them (dmesg | grep NVRM); update to a known-good driver branch; collect nvidia-bug-report.sh",
    condition=f">= {MIN_LINES.value} NVRM line containing 'error' or 'failed' (Xids excluded)",
    thresholds=(MIN_LINES,),
    evaluate=evaluate,
)
