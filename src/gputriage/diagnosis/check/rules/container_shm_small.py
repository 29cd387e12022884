"""A small /dev/shm in a container: DataLoader workers crash or crawl (playbook mistake 5)."""

from gputriage.diagnosis.check.base import CHECK, GIB, Evidence, gib
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold

MIN_SHM_GIB = Threshold(
    "min_shm_gib",
    1.0,
    "GiB",
    "/dev/shm size under which DataLoader workers fail or slow down",
    "Docker's default is 64 MiB; PyTorch's docs advise raising it (--shm-size); judgement for 1 GiB",
)


def evaluate(ev: Evidence) -> list[Finding]:
    shm = ev.get("host.shm.total_bytes")
    kind = ev.get("host.container.kind")
    if kind and shm is not None and shm < MIN_SHM_GIB.value * GIB:
        return [
            RULE.finding(
                {"host.shm.total_bytes": shm, "shm": gib(shm), "host.container.kind": kind},
                severity=Severity.warn,
                subject="container",
            )
        ]
    return []


RULE = Rule(
    FindingSpec(
        id="container.shm_small",
        step=4,
        severity=Severity.warn,
        symptom="/dev/shm is small inside the container",
        cause="Docker's default 64 MiB /dev/shm: PyTorch DataLoader workers pass batches through shared memory and "
        "fail with 'bus error' or fall back to slow paths",
        decision="Start the container with --shm-size=16g (or --ipc=host); in Kubernetes mount an emptyDir with "
        "medium: Memory at /dev/shm",
        commands=CHECK,
        condition="in a container and /dev/shm < {min_shm_gib:g} GiB",
        thresholds=(MIN_SHM_GIB,),
    ),
    evaluate,
)
