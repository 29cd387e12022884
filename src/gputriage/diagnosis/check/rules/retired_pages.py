"""Page retirement pending (pre-Ampere ECC)."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    return [
        RULE.finding({f"gpu.{i}.retired_pages.pending": True}, severity=Severity.warn, subject=f"gpu.{i}")
        for i in ev.gpus
        if ev.gpu(i, "retired_pages.pending") is True
    ]


RULE = Rule(
    FindingSpec(
        id="ecc.retired_pages_pending",
        step=5,
        severity=Severity.warn,
        symptom="Memory pages are waiting to be retired",
        cause="ECC errors marked pages for retirement; it takes effect after the driver reloads",
        decision="Reset the GPU or reboot at the next opportunity; RMA if retirements keep growing",
        commands=CHECK,
        condition="NVML retired-pages pending status set",
        needs=("gpu",),
    ),
    evaluate,
)
