"""Page retirement pending (pre-Ampere ECC)."""

from gputriage.diagnosis.check.base import Evidence, Rule
from gputriage.model.finding import Finding, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    return [
        RULE.finding(Severity.warn, {f"gpu.{i}.retired_pages.pending": True}, subject=f"gpu.{i}")
        for i in ev.gpus
        if ev.gpu(i, "retired_pages.pending") is True
    ]


RULE = Rule(
    id="ecc.retired_pages_pending",
    step=5,
    severity=Severity.warn,
    needs=("gpu",),
    symptom="Memory pages are waiting to be retired",
    cause="ECC errors marked pages for retirement; it takes effect after the driver reloads",
    decision="Reset the GPU or reboot at the next opportunity; RMA if retirements keep growing",
    condition="NVML retired-pages pending status set",
    evaluate=evaluate,
)
