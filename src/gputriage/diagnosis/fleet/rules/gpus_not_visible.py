"""GPUs Ray counts on a node that the node's driver does not list: the cluster schedules work onto GPUs that are
not there."""

from __future__ import annotations

from gputriage.diagnosis.fleet.evidence import FLEET, FleetEvidence
from gputriage.diagnosis.fleet.nodes import who
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def evaluate(ev: FleetEvidence) -> list[Finding]:
    out = []
    for n in ev.nodes:
        if not n.gpus_not_visible or n.ray_gpus is None:
            continue
        seen = n.figures.gpus if n.figures is not None else 0
        evidence = {"node": who(n), "ray_gpus": n.ray_gpus, "driver_gpus": seen, "not_visible": n.gpus_not_visible}
        out.append(RULE.finding(evidence, subject=who(n), say="missing", fill=evidence))
    return out


RULE = Rule(
    FindingSpec(
        id="fleet.gpus_not_visible",
        step=1,
        severity=Severity.critical,
        commands=FLEET,
        needs=("a Ray cluster",),
        symptom="Ray counts GPUs on a node that its driver does not see",
        cause="A GPU the cluster schedules onto is lost to its node: fallen off the bus, a driver not loaded or "
        "mismatched, or a container started without its devices; tasks placed there fail or run on the CPU",
        decision="Drain the node (`ray drain-node`, or stop scheduling there) and run `gputriage check` on it: the "
        "driver, the kernel log (Xid 79) and the container's devices say which",
        condition="an answering node lists fewer GPUs through its driver (NVML) than Ray's GPU resource counts on it",
        says={
            "missing": Wording(
                symptom="{node}: {not_visible} of the GPUs Ray counts there not visible to its driver (Ray counts "
                "{ray_gpus:g}, the driver lists {driver_gpus})"
            )
        },
    ),
    evaluate,
)
