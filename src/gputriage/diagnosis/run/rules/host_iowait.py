"""The host's CPUs waited on I/O through the run (triage step 4)."""

from __future__ import annotations

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RUN, RunEvidence
from gputriage.diagnosis.thresholds import IOWAIT
from gputriage.model.finding import Finding, FindingSpec, Severity
from gputriage.model.numbers import median


def evaluate(ev: RunEvidence) -> list[Finding]:
    """The median iowait over the run's windows at or over the threshold."""
    iowait = [x for x in ev.host.column("iowait_pct") if x is not None] if len(ev.host) else []
    if not iowait or median(iowait) < IOWAIT.value:
        return []
    return [RULE.finding({"median_iowait_pct": round(median(iowait), 1)}, subject="host")]


RULE = Rule(
    FindingSpec(
        id="run.host_iowait",
        step=4,
        severity=Severity.warn,
        commands=RUN,
        symptom="CPUs waited on I/O during the run",
        cause="Storage or a network filesystem cannot feed the input pipeline",
        decision="Use local NVMe, sharded sequential formats, caching; measure with `gputriage bench`",
        condition="median iowait over the run's windows >= {iowait_pct:g}% of CPU time",
        thresholds=(IOWAIT,),
    ),
    evaluate,
)
