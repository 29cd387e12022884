"""Temperature close to the slowdown threshold."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold

MARGIN_C = Threshold(
    "margin_c", 5, "C", "distance to the slowdown temperature at which the next hot day throttles", "judgement"
)


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for i in ev.gpus:
        temp, slowdown = ev.gpu(i, "temperature_c"), ev.gpu(i, "temperature.slowdown_c")
        if temp is not None and slowdown and temp >= slowdown - MARGIN_C.value:
            out.append(
                RULE.finding(
                    {f"gpu.{i}.temperature_c": temp, f"gpu.{i}.temperature.slowdown_c": slowdown},
                    severity=Severity.warn,
                    subject=f"gpu.{i}",
                )
            )
    return out


RULE = Rule(
    FindingSpec(
        id="thermal.near_slowdown",
        step=5,
        severity=Severity.warn,
        symptom="The GPU runs within a few degrees of its slowdown temperature",
        cause="Insufficient cooling for the load: throttling is imminent",
        decision="Improve airflow/cooling before long runs; hot GPUs throttle and throttled GPUs lie about performance",
        commands=CHECK,
        condition="temperature >= slowdown threshold - {margin_c:g} °C",
        thresholds=(MARGIN_C,),
        needs=("gpu",),
    ),
    evaluate,
)
