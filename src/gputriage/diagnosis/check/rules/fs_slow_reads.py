"""Slow reads where the job works (measured by `check --full`)."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold

MIN_SEQ_MBPS = Threshold(
    "min_seq_read_mb_per_s",
    500.0,
    "MB/s",
    "sequential read rate under which storage cannot feed a GPU",
    "GPU triage playbook, tasks 7-8 (fio baseline); judgement: a SATA SSD reads ~500 MB/s",
)
MIN_RAND_IOPS = Threshold(
    "min_rand_read_4k_iops",
    2000.0,
    "IOPS",
    "4 KiB random read rate under which small-file datasets crawl",
    "GPU triage playbook, tasks 7-8; judgement: network filesystems and HDDs read < 2,000 IOPS",
)


def evaluate(ev: Evidence) -> list[Finding]:
    seq, rnd = ev.get("host.fs.cwd.seq_read_mbps"), ev.get("host.fs.cwd.rand_read_4k_iops")
    if seq is None and rnd is None:
        return []
    slow_seq = seq is not None and seq < MIN_SEQ_MBPS.value
    slow_rnd = rnd is not None and rnd < MIN_RAND_IOPS.value
    if not (slow_seq or slow_rnd):
        return []
    return [
        RULE.finding(
            {
                "host.fs.cwd.seq_read_mbps": seq,
                "host.fs.cwd.rand_read_4k_iops": rnd,
                "host.fs.cwd.fstype": ev.get("host.fs.cwd.fstype"),
                "probe": ev.get("host.fs.cwd.read_probe"),
            },
            severity=Severity.warn,
            subject="host",
        )
    ]


RULE = Rule(
    FindingSpec(
        id="fs.slow_reads",
        step=4,
        severity=Severity.warn,
        symptom="The working directory's filesystem reads slowly",
        cause="Sequential reads or small random reads are slow here: datasets read from it will starve the GPU",
        decision="Put datasets on local NVMe or cache them; use large sharded files (sequential reads) instead of many "
        "small files; measure the real path with `gputriage bench --disk PATH`",
        commands=CHECK,
        condition="sequential < {min_seq_read_mb_per_s:g} MB/s or 4 KiB random < {min_rand_read_4k_iops:g} IOPS "
        "(check --full)",
        thresholds=(MIN_SEQ_MBPS, MIN_RAND_IOPS),
    ),
    evaluate,
)
