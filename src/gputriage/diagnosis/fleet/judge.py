"""A fleet check judged: its nodes named, the fleet's evidence made once (`FleetEvidence`), every `fleet.*` rule
evaluated over it and its findings finished as every judge's are (`diagnosis.finish`); the outlier and drift tables
drawn from those findings, the nodes' own findings by id, the idle share at the check."""

from __future__ import annotations

from typing import Optional

from gputriage.diagnosis.finish import finish
from gputriage.diagnosis.fleet.evidence import FleetEvidence
from gputriage.diagnosis.fleet.nodes import name_nodes, not_visible, who
from gputriage.diagnosis.fleet.rules.drift import RULE as DRIFT
from gputriage.diagnosis.fleet.rules.outlier import RULE as OUTLIER
from gputriage.diagnosis.fleet.waste import waste
from gputriage.diagnosis.rule import evaluate_all, rules_of
from gputriage.diagnosis.verify import Context
from gputriage.model.finding import Finding
from gputriage.model.fleet import Drift, FleetReport, NodeResult, Outlier


def judge(report: FleetReport, price: Optional[float], currency: str = "USD") -> None:
    """A fleet report's nodes named and set against each other: the fleet's findings (outliers, drift, failed
    nodes, GPUs the driver does not see), the nodes' findings by id, the idle share."""
    name_nodes(report.nodes)
    for n in report.nodes:
        n.gpus_not_visible = not_visible(n)
    report.nodes.sort(key=lambda n: (n.name, n.node_id))
    evidence = FleetEvidence.of(report.nodes, report.address, report.bench)
    found = evaluate_all(rules_of("fleet"), evidence)
    report.outliers = [outlier_row(f) for f in found if f.id == OUTLIER.id]
    report.drift = [Drift(key=f.evidence["key"], values=f.evidence["values"]) for f in found if f.id == DRIFT.id]
    args = ["bench" if report.bench else "check", "--ray", report.address]
    report.findings = finish(found, Context("fleet", fleet_args=args))
    report.findings_by_id = findings_by_id(report.nodes)
    report.waste = waste(report.nodes, price, currency)


def outlier_row(f: Finding) -> Outlier:
    """A `fleet.outlier` finding as a row of the table of nodes below the fleet."""
    ev = f.evidence
    return Outlier(
        node=ev["node"],
        figure=ev["figure"],
        value=ev["value"],
        fleet_median=ev["fleet_median"],
        threshold=ev["threshold"],
        unit=ev["unit"],
    )


def findings_by_id(nodes: list[NodeResult]) -> dict[str, list[str]]:
    """Each id the nodes' checks reported, with the nodes that reported it, the most widespread first."""
    out: dict[str, list[str]] = {}
    for n in nodes:
        for f in n.findings:
            if who(n) not in out.setdefault(f.id, []):
                out[f.id].append(who(n))
    return dict(sorted(out.items(), key=lambda kv: -len(kv[1])))
