"""'GPU has fallen off the bus' (playbook task 12, mistake 4)."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    count = ev.get("kernel.fallen_off_bus")
    if count:
        return [RULE.finding({"kernel.fallen_off_bus": count}, severity=Severity.critical, subject="host")]
    return []


RULE = Rule(
    FindingSpec(
        id="pcie.fallen_off_bus",
        step=5,
        severity=Severity.critical,
        symptom="The kernel log says a GPU has fallen off the bus",
        cause="Rarely your model code: power delivery, an unstable PCIe link, risers, overheating, sometimes a driver "
        "bug",
        decision="Inspect PSU and cabling, reseat the GPU, check BIOS PCIe settings and temperatures; cap power while "
        "debugging; try another driver branch",
        commands=CHECK,
        condition="any 'fallen off the bus' line in the kernel log",
        needs=("kernel_log",),
    ),
    evaluate,
)
