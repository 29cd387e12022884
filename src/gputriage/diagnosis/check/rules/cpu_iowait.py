"""CPU time waiting on I/O: storage is slowing the pipeline (triage step 4)."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.thresholds import IOWAIT
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    iowait = ev.get("host.cpu.iowait_pct")
    if iowait is not None and iowait >= IOWAIT.value:
        return [
            RULE.finding(
                {"host.cpu.iowait_pct": iowait, "host.fs.cwd.fstype": ev.get("host.fs.cwd.fstype")},
                severity=Severity.warn,
                subject="host",
            )
        ]
    return []


RULE = Rule(
    FindingSpec(
        id="cpu.iowait",
        step=4,
        severity=Severity.warn,
        symptom="CPUs spend a large share of time waiting for I/O",
        cause="Storage cannot feed the readers: small files, network filesystems, or a slow disk",
        decision="Measure the disk (`gputriage bench --disk`); use sharded sequential formats, local NVMe cache, "
        "memory-mapping",
        commands=CHECK,
        condition="iowait >= {iowait_pct:g}% of CPU time over the window",
        thresholds=(IOWAIT,),
    ),
    evaluate,
)
