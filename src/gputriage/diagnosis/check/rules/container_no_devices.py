"""Inside a container without the GPU device nodes (playbook task 10)."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    kind = ev.get("host.container.kind")
    nodes = ev.get("host.dev.nvidia_nodes")
    if kind and nodes is not None and not nodes:
        return [
            RULE.finding(
                {
                    "host.container.kind": kind,
                    "host.dev.nvidia_nodes": nodes,
                    "env.NVIDIA_VISIBLE_DEVICES": ev.get("env.NVIDIA_VISIBLE_DEVICES"),
                },
                severity=Severity.critical,
                subject="container",
            )
        ]
    return []


RULE = Rule(
    FindingSpec(
        id="container.no_gpu_devices",
        step=1,
        severity=Severity.critical,
        symptom="Running in a container with no /dev/nvidia* device nodes",
        cause="The container was started without GPU pass-through (no --gpus / runtime class / device plugin)",
        decision="Start the container with --gpus all (NVIDIA Container Toolkit) or the Kubernetes nvidia.com/gpu "
        "resource; validate with `docker run --rm --gpus all <cuda image> nvidia-smi -L`",
        commands=CHECK,
        condition="container detected and no /dev/nvidia* node",
    ),
    evaluate,
)
