"""Time already lost to thermal limits since the driver loaded."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold

MIN_VIOLATION_S = Threshold(
    "min_violation_s",
    1.0,
    "s",
    "time spent thermally limited since the counter started",
    "NVML nvmlDeviceGetViolationStatus (NVML_PERF_POLICY_THERMAL)",
)


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for i in ev.gpus:
        ns = ev.gpu(i, "violation.thermal_ns")
        if ns is not None and ns / 1e9 >= MIN_VIOLATION_S.value:
            out.append(
                RULE.finding(
                    {f"gpu.{i}.violation.thermal_ns": ns, "thermal_limited_s": round(ns / 1e9, 1)},
                    severity=Severity.warn,
                    subject=f"gpu.{i}",
                )
            )
    return out


RULE = Rule(
    FindingSpec(
        id="thermal.violation_time",
        step=5,
        severity=Severity.warn,
        symptom="The GPU has spent time clocked down by thermal limits since the driver loaded",
        cause="Past heavy loads hit thermal limits: cooling is marginal for sustained work",
        decision="Watch a real job (`gputriage watch`) to see when it throttles; improve cooling before blaming code",
        commands=CHECK,
        condition="NVML thermal violation time >= {min_violation_s:g} s",
        thresholds=(MIN_VIOLATION_S,),
        needs=("gpu",),
    ),
    evaluate,
)
