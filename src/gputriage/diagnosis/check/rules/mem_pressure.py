"""PSI memory pressure: tasks stalled on memory reclaim."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold

SOME_AVG10 = Threshold(
    "mem_psi_some_avg10_pct",
    10.0,
    "%",
    "Share of the last 10 s in which some task stalled on memory reclaim (PSI), from which memory is short",
    "Linux PSI (Documentation/accounting/psi.rst); judgement for 10%: reclaim stalls are rarer than CPU waits, and "
    "each one delays the pipeline",
)


def evaluate(ev: Evidence) -> list[Finding]:
    psi = ev.get("host.psi.memory.some_avg10_pct")
    if psi is not None and psi >= SOME_AVG10.value:
        return [RULE.finding({"host.psi.memory.some_avg10_pct": psi}, severity=Severity.warn, subject="host")]
    return []


RULE = Rule(
    FindingSpec(
        id="mem.pressure",
        step=4,
        severity=Severity.warn,
        symptom="Tasks stall waiting for memory (PSI memory pressure)",
        cause="The kernel is reclaiming pages (page cache, swap) to satisfy allocations: every stall delays the "
        "pipeline",
        decision="Lower host memory use or raise the cgroup memory limit; check for a leak in long-running loaders",
        commands=CHECK,
        condition="/proc/pressure/memory some avg10 >= {mem_psi_some_avg10_pct:g}%",
        thresholds=(SOME_AVG10,),
    ),
    evaluate,
)
