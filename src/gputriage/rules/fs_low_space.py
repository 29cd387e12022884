"""Little free space where the job writes checkpoints and logs."""

from gputriage.model.finding import Finding, Severity
from gputriage.rules.base import Evidence, Rule, gib, pct

FREE_MIN_PCT = 5.0
FREE_MIN_BYTES = 10 * 2**30


def evaluate(ev: Evidence) -> list[Finding]:
    free, total = ev.get("host.fs.cwd.free_bytes"), ev.get("host.fs.cwd.total_bytes")
    if free is None or not total:
        return []
    if pct(free, total) < FREE_MIN_PCT and free < FREE_MIN_BYTES:
        return [RULE.finding(Severity.warn, {"host.fs.cwd.mountpoint": ev.get("host.fs.cwd.mountpoint"),
                                             "host.fs.cwd.free_bytes": free, "free": gib(free),
                                             "free_pct": pct(free, total)}, subject="host")]
    return []


RULE = Rule(
    id="fs.low_space", step=4,
    symptom="The working directory's filesystem is almost full",
    cause="Checkpoints and logs will fail to write mid-run",
    decision="Free space or point checkpoints to a larger volume before a long run",
    threshold=f"free < {FREE_MIN_PCT:.0f}% and < {gib(FREE_MIN_BYTES)}",
    evaluate=evaluate,
)
