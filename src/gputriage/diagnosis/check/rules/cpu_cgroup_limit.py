"""A cgroup CPU quota far below the machine's cores (containers: playbook mistake 5)."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold

MIN_CORES_PER_GPU = Threshold(
    "min_cores_per_gpu",
    4.0,
    "cores",
    "CPU quota per visible GPU under which the pipeline and launch thread starve",
    "judgement: a launch thread plus a few loader workers per GPU",
)


def evaluate(ev: Evidence) -> list[Finding]:
    limit = ev.get("host.cgroup.cpu_limit_cores")
    gpus = len(ev.gpus)
    if limit is None or not gpus:
        return []
    if limit < MIN_CORES_PER_GPU.value * gpus:
        return [
            RULE.finding(
                {"host.cgroup.cpu_limit_cores": limit, "gpu.count": gpus, "host.cpu.count": ev.get("host.cpu.count")},
                severity=Severity.warn,
                subject="host",
            )
        ]
    return []


RULE = Rule(
    FindingSpec(
        id="cpu.cgroup_limited",
        step=4,
        severity=Severity.warn,
        symptom="The container's CPU quota is small for the GPUs it drives",
        cause="A cgroup CPU limit throttles the data pipeline and the launch thread regardless of idle host cores",
        decision="Raise the CPU request/limit (docker --cpus, Kubernetes resources) or lighten per-sample CPU work",
        commands=CHECK,
        condition="cgroup quota < {min_cores_per_gpu:g} cores per visible GPU",
        thresholds=(MIN_CORES_PER_GPU,),
        needs=("gpu",),
    ),
    evaluate,
)
