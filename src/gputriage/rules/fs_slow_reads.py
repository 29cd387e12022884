"""Slow reads where the job works (measured by `check --full`)."""

from gputriage.model.finding import Finding, Severity
from gputriage.rules.base import Evidence, Rule

MIN_SEQ_MBPS = 500.0
MIN_RAND_IOPS = 2000.0


def evaluate(ev: Evidence) -> list[Finding]:
    seq, rnd = ev.get("host.fs.cwd.seq_read_mbps"), ev.get("host.fs.cwd.rand_read_4k_iops")
    if seq is None and rnd is None:
        return []
    slow_seq = seq is not None and seq < MIN_SEQ_MBPS
    slow_rnd = rnd is not None and rnd < MIN_RAND_IOPS
    if not (slow_seq or slow_rnd):
        return []
    return [RULE.finding(Severity.warn, {"host.fs.cwd.seq_read_mbps": seq, "host.fs.cwd.rand_read_4k_iops": rnd,
                                         "host.fs.cwd.fstype": ev.get("host.fs.cwd.fstype"),
                                         "probe": ev.get("host.fs.cwd.read_probe")}, subject="host")]


RULE = Rule(
    id="fs.slow_reads", step=4,
    symptom="The working directory's filesystem reads slowly",
    cause="Sequential reads or small random reads are slow here: datasets read from it will starve the GPU",
    decision="Put datasets on local NVMe or cache them; use large sharded files (sequential reads) instead of many "
             "small files; measure the real path with `gputriage bench --disk PATH`",
    threshold=f"sequential < {MIN_SEQ_MBPS:.0f} MB/s or 4 KiB random < {MIN_RAND_IOPS:.0f} IOPS (check --full)",
    evaluate=evaluate,
)
