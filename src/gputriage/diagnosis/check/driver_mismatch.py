"""Kernel module and user-space driver library of different versions."""

from gputriage.diagnosis.check.base import Evidence, Rule
from gputriage.model.finding import Finding, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    failure = ev.unavailable("driver.nvml")
    if failure is not None and failure.reason == "driver_mismatch":
        return [RULE.finding(Severity.critical, {"driver.nvml": str(failure)}, subject="host")]
    return []


RULE = Rule(
    id="driver.version_mismatch",
    step=1,
    severity=Severity.critical,
    symptom="NVML reports 'Driver/library version mismatch'",
    cause="The driver packages were upgraded but the old kernel module is still loaded",
    decision="Reboot (or unload and reload the nvidia kernel modules) so the kernel module matches the library",
    condition="NVML init returns LIB_RM_VERSION_MISMATCH",
    evaluate=evaluate,
)
