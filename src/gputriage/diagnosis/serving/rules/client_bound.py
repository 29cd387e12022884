"""The load generator itself as the bottleneck: its event loop out of CPU, or this machine out of connections."""

from __future__ import annotations

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.serving.evidence import LOAD, LoadEvidence
from gputriage.diagnosis.serving.steps import load_name
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold

CLIENT_CPU = Threshold(
    "client_cpu_pct",
    90.0,
    "% of a core",
    "the generator's event loop: above it, it cannot send and read fast enough to load the server as asked",
    "judgement",
)


def evaluate(ev: LoadEvidence) -> list[Finding]:
    for s in ev.asked:
        # a step whose requests all failed at once spins the loop through them: its CPU says nothing
        busy = s.ok > 0 and (s.client_cpu_pct or 0) >= CLIENT_CPU.value
        if busy or s.errors.get("client_sockets"):
            evidence = {
                "at": load_name(s),
                "client_cpu_pct": s.client_cpu_pct,
                "client_socket_errors": s.errors.get("client_sockets", 0),
            }
            return [RULE.finding(evidence)]
    return []


RULE = Rule(
    FindingSpec(
        id="load.client_bound",
        step=4,
        severity=Severity.warn,
        commands=LOAD,
        thresholds=(CLIENT_CPU,),
        symptom="The load generator itself was the bottleneck",
        cause="gputriage's client ran out of CPU (or connections): it sent and read less than asked, so this step's "
        "figures understate what the server can do",
        decision="Run the load from another machine or with fewer streamed chunks (larger stream intervals); read "
        "this step's latency as a lower bound on load",
        condition="the generator's event loop >= {client_cpu_pct:g}% of a core (in a step where requests were "
        "answered), or connections this machine could not open",
    ),
    evaluate,
)
