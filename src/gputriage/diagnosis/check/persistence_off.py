"""Persistence mode off on Linux."""

from gputriage.diagnosis.check.base import Evidence, Rule
from gputriage.model.finding import Finding, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    return [
        RULE.finding(Severity.info, {f"gpu.{i}.persistence_mode": False}, subject=f"gpu.{i}")
        for i in ev.gpus
        if ev.gpu(i, "persistence_mode") is False
    ]


RULE = Rule(
    id="gpu.persistence_off",
    step=5,
    severity=Severity.info,
    needs=("gpu",),
    symptom="Persistence mode is off",
    cause="The driver tears the GPU state down when no client holds it: every job start pays seconds of "
    "initialization and settings may reset",
    decision="Run nvidia-persistenced on the host (admin); gputriage never changes it",
    condition="persistence mode readable and off",
    evaluate=evaluate,
)
