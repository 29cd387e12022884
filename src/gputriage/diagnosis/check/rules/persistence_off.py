"""Persistence mode off on Linux."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    return [
        RULE.finding({f"gpu.{i}.persistence_mode": False}, severity=Severity.info, subject=f"gpu.{i}")
        for i in ev.gpus
        if ev.gpu(i, "persistence_mode") is False
    ]


RULE = Rule(
    FindingSpec(
        id="gpu.persistence_off",
        step=5,
        severity=Severity.info,
        symptom="Persistence mode is off",
        cause="The driver tears the GPU state down when no client holds it: every job start pays seconds of "
        "initialization and settings may reset",
        decision="Run nvidia-persistenced on the host (admin); gputriage never changes it",
        commands=CHECK,
        condition="persistence mode readable and off",
        needs=("gpu",),
    ),
    evaluate,
)
