"""Little host memory available."""

from gputriage.model.finding import Finding, Severity
from gputriage.rules.base import Evidence, Rule, gib, pct

AVAILABLE_MIN_PCT = 10.0


def evaluate(ev: Evidence) -> list[Finding]:
    avail, total = ev.get("host.mem.available_bytes"), ev.get("host.mem.total_bytes")
    if avail is None or not total or pct(avail, total) >= AVAILABLE_MIN_PCT:
        return []
    return [RULE.finding(Severity.warn, {"host.mem.available_bytes": avail, "host.mem.total_bytes": total,
                                         "available_pct": pct(avail, total), "available": gib(avail)}, subject="host")]


RULE = Rule(
    id="mem.low_available", step=4,
    symptom="Host memory is nearly exhausted",
    cause="The job, its data loaders and caches use almost all RAM: swapping or the OOM killer come next",
    decision="Reduce DataLoader workers/prefetch, pinned-memory pools and dataset caches, or add RAM",
    threshold=f"MemAvailable < {AVAILABLE_MIN_PCT:.0f}% of MemTotal",
    evaluate=evaluate,
)
