"""Power cap holding the clocks down at the limit."""

from gputriage.diagnosis.check.base import CHECK, Evidence, pct
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording

AT_LIMIT_PCT = Threshold(
    "at_limit_pct",
    95.0,
    "% of limit",
    "power draw at which the GPU sits at its limit",
    "NVML sw_power_cap reason; judgement for 95%",
)


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for i in ev.gpus:
        reasons = ev.gpu(i, "clock.event_reasons") or []
        draw, limit = ev.gpu(i, "power.draw_mw"), ev.gpu(i, "power.limit_enforced_mw")
        default = ev.gpu(i, "power.limit_default_mw")
        if "sw_power_cap" not in reasons or not draw or not limit or pct(draw, limit) < AT_LIMIT_PCT.value:
            continue
        evidence = {
            f"gpu.{i}.power.draw_mw": draw,
            f"gpu.{i}.power.limit_enforced_mw": limit,
            "draw_pct_of_limit": pct(draw, limit),
            f"gpu.{i}.clock.sm_mhz": ev.gpu(i, "clock.sm_mhz"),
        }
        if default and limit < default:
            out.append(
                RULE.finding(
                    evidence | {f"gpu.{i}.power.limit_default_mw": default},
                    severity=Severity.warn,
                    subject=f"gpu.{i}",
                    say="lowered_limit",
                )
            )
        else:
            out.append(RULE.finding(evidence, severity=Severity.info, subject=f"gpu.{i}"))
    return out


RULE = Rule(
    FindingSpec(
        id="clocks.power_capped",
        step=2,
        severity=Severity.warn,
        symptom="The GPU draws its full power limit and lowers its clocks to stay under it",
        cause="A heavy workload at the board's default power limit: expected for dense GEMMs on datacenter GPUs",
        decision="Nothing to fix at the default limit; compare throughput with `gputriage bench`. If draw sits at a "
        "lowered limit, the cap is costing clock speed",
        commands=CHECK,
        condition="sw_power_cap reason active and draw >= {at_limit_pct:g}% of the enforced limit "
        "(warn when the enforced limit is below the default)",
        thresholds=(AT_LIMIT_PCT,),
        needs=("gpu",),
        says={
            "lowered_limit": Wording(
                cause="The enforced power limit is below the board's default, and the workload hits it: clocks drop "
                "to stay under it",
                decision="If the cap was set for stability, keep it and expect lower clocks; otherwise ask the admin "
                "to restore the default limit",
            )
        },
    ),
    evaluate,
)
