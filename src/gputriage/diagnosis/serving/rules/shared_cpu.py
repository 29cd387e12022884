"""A server beside the load generator on a machine whose CPUs are saturated: the figures are this crowded
machine's, not the server's alone."""

from __future__ import annotations

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.serving.evidence import LOAD, LoadEvidence
from gputriage.diagnosis.serving.steps import load_name
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording

MACHINE_BUSY = Threshold(
    "machine_cpu_pct",
    90.0,
    "% of all cores",
    "this machine's CPUs busy over a step while the server runs on it, beside the load generator",
    "judgement",
)


def evaluate(ev: LoadEvidence) -> list[Finding]:
    busy = [s for s in ev.asked if s.server_process is not None and (s.machine_cpu_pct or 0) >= MACHINE_BUSY.value]
    if not busy:
        return []
    s = busy[0]
    evidence = {
        "from": load_name(s),
        "machine_cpu_pct": s.machine_cpu_pct,
        "server_cpu_pct": s.server_process.cpu_pct if s.server_process else None,
        "client_cpu_pct": s.client_cpu_pct,
        "steps": len(busy),
    }
    return [RULE.finding(evidence, say="busy", fill={"busy_pct": s.machine_cpu_pct, "from": load_name(s)})]


RULE = Rule(
    FindingSpec(
        id="load.shared_cpu",
        step=4,
        severity=Severity.warn,
        commands=LOAD,
        needs=("local server",),
        thresholds=(MACHINE_BUSY,),
        symptom="The server and the load generator competed for this machine's CPUs",
        cause="The server runs on the machine that sends the load, and its CPUs were saturated: the server's Python "
        "side (tokenizer, scheduler, HTTP), a model served on the CPU, the generator's event loop and anything "
        "else running here take turns on the same cores, so latency and throughput describe this crowded "
        "machine, not the server alone",
        decision="Send the load from another machine, or pin the server and the generator to separate cores "
        "(taskset), and stop other work here; read these figures as what a saturated host gives",
        condition="the server's process runs here and this machine's CPUs are busy >= {machine_cpu_pct:g}% over a step",
        says={
            "busy": Wording(
                symptom="The server and the load generator competed for this machine's CPUs ({busy_pct:.0f}% busy "
                "from {from})"
            )
        },
    ),
    evaluate,
)
