"""Enforced power limit below the default (playbook task 13)."""

from gputriage.diagnosis.check.base import CHECK, Evidence, pct
from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.thresholds import POWER_LIMIT_LOWERED
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for i in ev.gpus:
        limit, default = ev.gpu(i, "power.limit_enforced_mw"), ev.gpu(i, "power.limit_default_mw")
        if limit and default and pct(limit, default) < POWER_LIMIT_LOWERED.value:
            out.append(
                RULE.finding(
                    {
                        f"gpu.{i}.power.limit_enforced_mw": limit,
                        f"gpu.{i}.power.limit_default_mw": default,
                        "limit_pct_of_default": pct(limit, default),
                    },
                    severity=Severity.info,
                    subject=f"gpu.{i}",
                )
            )
    return out


RULE = Rule(
    FindingSpec(
        id="power.limit_lowered",
        step=2,
        severity=Severity.info,
        symptom="The enforced power limit is well below the board's default",
        cause="Someone capped power (often deliberately, for stability or a PSU's budget); heavy kernels will run at "
        "lower clocks",
        decision="Keep it if it was set to stop resets or Xids; otherwise restore the default (nvidia-smi -pl, admin "
        "only) and compare throughput",
        commands=CHECK,
        condition="enforced limit < {power_limit_lowered_pct:g}% of the default limit",
        thresholds=(POWER_LIMIT_LOWERED,),
        needs=("gpu",),
    ),
    evaluate,
)
