"""This process may run on CPUs far from the GPU (playbook task 16)."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    nodes = ev.get("host.numa.node_count")
    mine = set(ev.get("host.process.cpu_affinity") or [])
    if not nodes or nodes <= 1 or not mine:  # one node: nothing is far
        return []
    out = []
    for i in ev.gpus:
        near = set(ev.gpu(i, "cpu_affinity") or [])
        if not near or near >= mine:
            continue
        far = sorted(mine - near)
        sev = Severity.warn if not mine & near else Severity.info
        out.append(
            RULE.finding(
                {
                    f"gpu.{i}.numa_node": ev.gpu(i, "numa_node"),
                    "gpu_local_cpus": len(near),
                    "process_cpus": len(mine),
                    "process_cpus_off_node": len(far),
                },
                severity=sev,
                subject=f"gpu.{i}",
            )
        )
    return out


RULE = Rule(
    FindingSpec(
        id="numa.affinity_mismatch",
        step=4,
        severity=Severity.warn,
        symptom="The process can run on CPUs of another NUMA node than the GPU's",
        cause="Host↔device copies and the launch thread cross the socket interconnect when threads land on the far "
        "node",
        decision="Pin the process and its data-loader workers to the GPU's local CPUs (numactl --cpunodebind, taskset, "
        "or the launcher's per-rank affinity)",
        commands=CHECK,
        condition="more than one NUMA node and process affinity not within the GPU's CPU affinity (warn when disjoint)",
        needs=("gpu",),
    ),
    evaluate,
)
