"""Environment variables that cost performance (CUDA_LAUNCH_BLOCKING=1 and the like)."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.environment import COSTLY_VARS
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    found = ev.get("env.costly") or {}
    out = []
    for var, value in found.items():
        bad, effect = COSTLY_VARS.get(var, (None, ""))
        if bad is not None and str(value).strip() == bad:
            out.append(
                RULE.spec.finding(
                    {f"env.{var}": value},
                    severity=Severity.warn,
                    subject="env",
                    symptom=f"{var}={value} is set",
                    cause=effect,
                    decision=f"Unset {var} outside debugging sessions",
                )
            )
    return out


RULE = Rule(
    FindingSpec(
        id="env.costly_variable",
        step=1,
        severity=Severity.warn,
        symptom="A debugging or compatibility variable that slows GPU work is set",
        cause="Variables like CUDA_LAUNCH_BLOCKING=1 serialize the CPU and GPU or disable fast paths",
        decision="Unset it outside debugging sessions",
        commands=CHECK,
        condition="one of: " + ", ".join(f"{k}={v[0]}" for k, v in COSTLY_VARS.items()),
    ),
    evaluate,
)
