"""Hardware slowdown or power brake asserted."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for i in ev.gpus:
        reasons = set(ev.gpu(i, "clock.event_reasons") or [])
        active = sorted(reasons & {"hw_slowdown", "hw_power_brake_slowdown"})
        if active:
            out.append(
                RULE.finding(
                    {
                        f"gpu.{i}.clock.event_reasons": active,
                        f"gpu.{i}.power.draw_mw": ev.gpu(i, "power.draw_mw"),
                        f"gpu.{i}.clock.sm_mhz": ev.gpu(i, "clock.sm_mhz"),
                    },
                    severity=Severity.critical,
                    subject=f"gpu.{i}",
                )
            )
    return out


RULE = Rule(
    FindingSpec(
        id="clocks.hw_slowdown",
        step=5,
        severity=Severity.critical,
        symptom="The board asserts a hardware slowdown or power brake",
        cause="External power-brake signal or the board protecting itself: power supply overload, PSU/cabling fault, "
        "or overheating hardware",
        decision="Check PSU capacity and cables, chassis power budget and temperatures; drain the node if it persists",
        commands=CHECK,
        condition="clock-event reason hw_slowdown or hw_power_brake_slowdown active",
        needs=("gpu",),
    ),
    evaluate,
)
