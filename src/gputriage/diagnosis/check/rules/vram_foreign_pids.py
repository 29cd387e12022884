"""GPU processes from another PID namespace: they exist, but cannot be named from here."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for i in ev.gpus:
        hidden = [p["pid"] for p in ev.gpu(i, "processes") or [] if p.get("visible") is False]
        if hidden:
            out.append(
                RULE.finding(
                    {f"gpu.{i}.hidden_pids": hidden, "host.container.kind": ev.get("host.container.kind")},
                    severity=Severity.info,
                    subject=f"gpu.{i}",
                )
            )
    return out


RULE = Rule(
    FindingSpec(
        id="vram.processes_outside_namespace",
        step=3,
        severity=Severity.info,
        symptom="The GPU runs processes this PID namespace cannot see",
        cause="Inside a container, NVML reports host PIDs: other containers or host processes share this GPU",
        decision="Run gputriage on the host (or the container with --pid=host) to name them; if they are not yours, "
        "the "
        "GPU is shared — ask for isolation",
        commands=CHECK,
        condition="a PID reported by NVML is absent from /proc",
        needs=("gpu",),
    ),
    evaluate,
)
