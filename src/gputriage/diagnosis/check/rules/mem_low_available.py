"""Little host memory available."""

from gputriage.diagnosis.check.base import CHECK, Evidence, gib, pct
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold

AVAILABLE_MIN_PCT = Threshold(
    "available_min_pct", 10.0, "%", "MemAvailable share under which the host is about to page", "judgement"
)


def evaluate(ev: Evidence) -> list[Finding]:
    avail, total = ev.get("host.mem.available_bytes"), ev.get("host.mem.total_bytes")
    if avail is None or not total or pct(avail, total) >= AVAILABLE_MIN_PCT.value:
        return []
    return [
        RULE.finding(
            {
                "host.mem.available_bytes": avail,
                "host.mem.total_bytes": total,
                "available_pct": pct(avail, total),
                "available": gib(avail),
            },
            severity=Severity.warn,
            subject="host",
        )
    ]


RULE = Rule(
    FindingSpec(
        id="mem.low_available",
        step=4,
        severity=Severity.warn,
        symptom="Host memory is nearly exhausted",
        cause="The job, its data loaders and caches use almost all RAM: swapping or the OOM killer come next",
        decision="Reduce DataLoader workers/prefetch, pinned-memory pools and dataset caches, or add RAM",
        commands=CHECK,
        condition="MemAvailable < {available_min_pct:g}% of MemTotal",
        thresholds=(AVAILABLE_MIN_PCT,),
    ),
    evaluate,
)
