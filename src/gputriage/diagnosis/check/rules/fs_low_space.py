"""Little free space where the job writes checkpoints and logs."""

from gputriage.diagnosis.check.base import CHECK, GIB, Evidence, gib, pct
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold

FREE_MIN_PCT = Threshold(
    "free_min_pct",
    5.0,
    "%",
    "free share of the working directory's filesystem under which checkpoints and caches fail",
    "judgement",
)
FREE_MIN_GIB = Threshold("free_min_gib", 10.0, "GiB", "free space under which a checkpoint may not fit", "judgement")


def evaluate(ev: Evidence) -> list[Finding]:
    free, total = ev.get("host.fs.cwd.free_bytes"), ev.get("host.fs.cwd.total_bytes")
    if free is None or not total:
        return []
    if pct(free, total) < FREE_MIN_PCT.value and free < FREE_MIN_GIB.value * GIB:
        return [
            RULE.finding(
                {
                    "host.fs.cwd.mountpoint": ev.get("host.fs.cwd.mountpoint"),
                    "host.fs.cwd.free_bytes": free,
                    "free": gib(free),
                    "free_pct": pct(free, total),
                },
                severity=Severity.warn,
                subject="host",
            )
        ]
    return []


RULE = Rule(
    FindingSpec(
        id="fs.low_space",
        step=4,
        severity=Severity.warn,
        symptom="The working directory's filesystem is almost full",
        cause="Checkpoints and logs will fail to write mid-run",
        decision="Free space or point checkpoints to a larger volume before a long run",
        commands=CHECK,
        condition="free < {free_min_pct:g}% and < {free_min_gib:g} GiB",
        thresholds=(FREE_MIN_PCT, FREE_MIN_GIB),
    ),
    evaluate,
)
