"""Enforced power limit below the default (seed task 13)."""

from gputriage.model.finding import Finding, Severity
from gputriage.rules.base import Evidence, Rule, pct

LOWERED_PCT = 90.0


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for i in ev.gpus:
        limit, default = ev.gpu(i, "power.limit_enforced_mw"), ev.gpu(i, "power.limit_default_mw")
        if limit and default and pct(limit, default) < LOWERED_PCT:
            out.append(RULE.finding(Severity.info, {f"gpu.{i}.power.limit_enforced_mw": limit,
                                                    f"gpu.{i}.power.limit_default_mw": default,
                                                    "limit_pct_of_default": pct(limit, default)}, subject=f"gpu.{i}"))
    return out


RULE = Rule(
    id="power.limit_lowered", step=2,
    symptom="The enforced power limit is well below the board's default",
    cause="Someone capped power (often deliberately, for stability or a PSU's budget); heavy kernels will run at "
          "lower clocks",
    decision="Keep it if it was set to stop resets or Xids; otherwise restore the default (nvidia-smi -pl, admin "
             "only) and compare throughput",
    threshold=f"enforced limit < {LOWERED_PCT:.0f}% of the default limit",
    evaluate=evaluate,
)
