"""A node of the fleet that did not report: its task failed or it did not answer within the timeout."""

from __future__ import annotations

from gputriage.diagnosis.fleet.evidence import FLEET, FleetEvidence
from gputriage.diagnosis.fleet.nodes import who
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def evaluate(ev: FleetEvidence) -> list[Finding]:
    out = []
    for n in ev.nodes:
        if n.ok:
            continue
        error = n.error or "no answer"
        evidence = {"node": who(n), "node_id": n.node_id, "address": n.address, "error": error}
        out.append(RULE.finding(evidence, subject=who(n), say="failed", fill={"node": who(n), "error": error}))
    return out


RULE = Rule(
    FindingSpec(
        id="fleet.node_failed",
        step=1,
        severity=Severity.warn,
        commands=FLEET,
        needs=("a Ray cluster",),
        symptom="A node of the fleet did not report",
        cause="Its check failed or did not answer within the timeout: its figures are missing from the comparison, "
        "and what is wrong with it is not known",
        decision="Run `gputriage check` on that node itself; after a timeout, raise --timeout or look for what hangs "
        "there (a GPU that does not answer NVML, an overloaded raylet)",
        condition="a chosen node's task raised, or sent nothing within --timeout",
        says={"failed": Wording(symptom="{node} did not report: {error}")},
    ),
    evaluate,
)
