"""Environment variables that cost performance (CUDA_LAUNCH_BLOCKING=1 and the like), as the user's job sets
them: a variable the engine running the check set itself (a Ray worker's own OMP_NUM_THREADS, `env.set_by_engine`)
is not the job's to change, and is not said."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.environment import COSTLY_VARS
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def evaluate(ev: Evidence) -> list[Finding]:
    found = ev.get("env.costly") or {}
    engine = ev.get("env.set_by_engine") or {}
    out = []
    for var, value in found.items():
        bad, effect = COSTLY_VARS.get(var, (None, ""))
        if bad is None or str(value).strip() != bad or engine.get(var) == value:
            continue
        out.append(
            RULE.finding(
                {f"env.{var}": value},
                severity=Severity.warn,
                subject="env",
                say="set",
                fill={"var": var, "value": value, "effect": effect},
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
        condition="one of: "
        + ", ".join(f"{k}={v[0]}" for k, v in COSTLY_VARS.items())
        + "; set by the job's environment, not by the engine that runs the check (a Ray worker sets "
        "OMP_NUM_THREADS itself when the node's environment has none)",
        # the cause: what that variable does (model.environment.COSTLY_VARS)
        says={
            "set": Wording(
                symptom="{var}={value} is set", cause="{effect}", decision="Unset {var} outside debugging sessions"
            )
        },
    ),
    evaluate,
)
