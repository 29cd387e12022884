"""Kernel module and user-space driver library of different versions."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    failure = ev.unavailable("driver.nvml")
    if failure is not None and failure.reason == "driver_mismatch":
        return [RULE.finding({"driver.nvml": str(failure)}, severity=Severity.critical, subject="host")]
    return []


RULE = Rule(
    FindingSpec(
        id="driver.version_mismatch",
        step=1,
        severity=Severity.critical,
        symptom="NVML reports 'Driver/library version mismatch'",
        cause="The driver packages were upgraded but the old kernel module is still loaded",
        decision="Reboot (or unload and reload the nvidia kernel modules) so the kernel module matches the library",
        commands=CHECK,
        condition="NVML init returns LIB_RM_VERSION_MISMATCH",
    ),
    evaluate,
)
