"""Every core busy: the host CPU is the ceiling."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold

MEDIAN_BUSY_PCT = Threshold(
    "median_core_busy_pct",
    90.0,
    "%",
    "median core busy share at which the host CPU is the ceiling",
    "GPU triage playbook, task 6 (mpstat); judgement for 90%",
)


def evaluate(ev: Evidence) -> list[Finding]:
    median = ev.get("host.cpu.median_core_busy_pct")
    if median is not None and median >= MEDIAN_BUSY_PCT.value:
        return [
            RULE.finding(
                {
                    "host.cpu.median_core_busy_pct": median,
                    "host.cpu.loadavg_1m": ev.get("host.cpu.loadavg_1m"),
                    "host.cpu.count": ev.get("host.cpu.count"),
                },
                severity=Severity.warn,
                subject="host",
            )
        ]
    return []


RULE = Rule(
    FindingSpec(
        id="cpu.saturated",
        step=4,
        severity=Severity.warn,
        symptom="All CPU cores are busy",
        cause="The host CPU is saturated: data loading/decoding for every GPU, or other jobs on the machine",
        decision="Find the consumers (top/pidstat); cut CPU work per sample (pre-decoded/pre-tokenized data, GPU "
        "augmentation) or give the job more cores",
        commands=CHECK,
        condition="median core >= {median_core_busy_pct:g}% busy",
        thresholds=(MEDIAN_BUSY_PCT,),
    ),
    evaluate,
)
