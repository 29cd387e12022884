"""Thermal slowdown active (playbook task 14)."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.clock_events import THERMAL_REASONS
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for i in ev.gpus:
        reasons = set(ev.gpu(i, "clock.event_reasons") or [])
        active = sorted(reasons & THERMAL_REASONS)
        if active:
            sev = Severity.critical if "hw_thermal_slowdown" in active else Severity.warn
            out.append(
                RULE.finding(
                    {
                        f"gpu.{i}.clock.event_reasons": active,
                        f"gpu.{i}.temperature_c": ev.gpu(i, "temperature_c"),
                        f"gpu.{i}.temperature.slowdown_c": ev.gpu(i, "temperature.slowdown_c"),
                        f"gpu.{i}.clock.sm_mhz": ev.gpu(i, "clock.sm_mhz"),
                        f"gpu.{i}.clock.sm_max_mhz": ev.gpu(i, "clock.sm_max_mhz"),
                    },
                    severity=sev,
                    subject=f"gpu.{i}",
                )
            )
    return out


RULE = Rule(
    FindingSpec(
        id="clocks.thermal_slowdown",
        step=2,
        severity=Severity.warn,
        symptom="The GPU is cutting its clocks because it is too hot",
        cause="Cooling cannot remove the heat: airflow, dust, fan curve, ambient temperature, or a failing cooler",
        decision="Improve airflow and cooling (clean filters, fan curve, rack placement); do not tune kernels while "
        "the "
        "GPU throttles — measured performance is a lie until it stops",
        commands=CHECK,
        condition="clock-event reason sw_thermal_slowdown (warn) or hw_thermal_slowdown (critical) active",
        needs=("gpu",),
    ),
    evaluate,
)
