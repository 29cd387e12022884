"""PSI memory pressure: tasks stalled on memory reclaim."""

from gputriage.diagnosis.check.base import Evidence, Rule
from gputriage.model.finding import Finding, Severity

SOME_AVG10_PCT = 10.0


def evaluate(ev: Evidence) -> list[Finding]:
    psi = ev.get("host.psi.memory.some_avg10_pct")
    if psi is not None and psi >= SOME_AVG10_PCT:
        return [RULE.finding(Severity.warn, {"host.psi.memory.some_avg10_pct": psi}, subject="host")]
    return []


RULE = Rule(
    id="mem.pressure", step=4, severity=Severity.warn,
    symptom="Tasks stall waiting for memory (PSI memory pressure)",
    cause="The kernel is reclaiming pages (page cache, swap) to satisfy allocations: every stall delays the pipeline",
    decision="Lower host memory use or raise the cgroup memory limit; check for a leak in long-running loaders",
    condition=f"/proc/pressure/memory some avg10 >= {SOME_AVG10_PCT:.0f}%",
    evaluate=evaluate,
)
