"""The fleet's own findings (`fleet.*`), over nodes given as their checks answer, without Ray: a node more than a
robust spread under the fleet's median is `fleet.outlier` (naming the figure, the node, its value, the median and
the cut), and one within the spread's floor is not; nodes that differ are `fleet.drift`; a node that failed and
GPUs its driver does not see are said; the tables of the report are those findings; `gputriage rules --command
fleet` lists them."""

from __future__ import annotations

import io
import json

from rich.console import Console
from typer.testing import CliRunner

from gputriage.cli.main import app
from gputriage.diagnosis import catalog
from gputriage.diagnosis.fleet.judge import judge
from gputriage.diagnosis.fleet.rules.outlier import FLOOR, MIN_NODES
from gputriage.model.fleet import FleetReport, NodeFigures, NodeResult
from gputriage.report.fleet_terminal import render
from gputriage.report.html_fleet import fleet_page


def node(name: str, **figures: object) -> NodeResult:
    base: dict[str, object] = {"hostname": name, "gpus": 1, "driver": "575.51.03", "pcie_width": 16.0}
    return NodeResult(
        node_id=name.encode().hex().ljust(56, "0"),
        hostname=name,
        ray_gpus=1.0,
        figures=NodeFigures(**{**base, **figures}),  # type: ignore[arg-type]
    )


def judged(nodes: list[NodeResult]) -> FleetReport:
    r = FleetReport(address="192.0.2.2:6379", nodes=nodes)
    judge(r, None)
    return r


def test_a_node_below_the_fleets_spread_is_an_outlier_and_the_table_says_the_same() -> None:
    r = judged([node("a"), node("b"), node("c"), node("d", pcie_width=8.0)])
    (f,) = [f for f in r.findings if f.id == "fleet.outlier"]
    assert f.subject == "d" and f.evidence["figure"] == "pcie_width" and f.evidence["value"] == 8
    assert f.evidence["fleet_median"] == 16 and f.evidence["threshold"] == 16 * (1 - FLOOR.value)
    assert f.symptom == "d: pcie_width 8 lanes against a fleet median of 16 (threshold 15.2)"
    assert "fewer lanes" in f.cause and f.verify == "gputriage fleet check --ray 192.0.2.2:6379"
    (row,) = r.outliers
    assert (row.node, row.figure, row.value, row.fleet_median, row.threshold, row.unit) == (
        "d",
        "pcie_width",
        8,
        16,
        f.evidence["threshold"],
        "lanes",
    )


def test_the_spreads_floor_and_the_fewest_nodes_are_the_thresholds_named() -> None:
    """Identical nodes: a power limit just inside the floor is not called out, just outside it is; with fewer nodes
    than the threshold asks, nothing is."""
    inside, outside = 700 * (1 - FLOOR.value) + 1, 700 * (1 - FLOOR.value) - 1
    peers = [node(x, power_limit_w=700.0) for x in "abc"]
    assert not judged([*peers, node("d", power_limit_w=inside)]).outliers
    assert [o.node for o in judged([*peers, node("d", power_limit_w=outside)]).outliers] == ["d"]
    few = [node(x, power_limit_w=700.0) for x in "abc"[: int(MIN_NODES.value) - 2]]
    assert not judged([*few, node("d", power_limit_w=350.0)]).outliers


def test_drift_a_failed_node_and_gpus_the_driver_does_not_see_are_the_fleets_findings() -> None:
    lost = node("e", gpus=0)
    failed = NodeResult(node_id="f" * 56, hostname="f", ok=False, error="no answer within 300 s")
    r = judged([node("a"), node("b", driver="570.86.15"), lost, failed])
    by_id = {f.id: f for f in r.findings}
    drift = by_id["fleet.drift"]
    assert drift.symptom == "The NVIDIA driver differs across nodes: 570.86.15 on b; 575.51.03 on the 2 others"
    assert [(d.key, d.values) for d in r.drift] == [("driver", {"575.51.03": ["a", "e"], "570.86.15": ["b"]})]
    assert by_id["fleet.node_failed"].symptom == "f did not report: no answer within 300 s"
    gone = by_id["fleet.gpus_not_visible"]
    assert gone.subject == "e" and gone.severity.value == "critical" and gone.evidence["not_visible"] == 1
    assert [f.id for f in r.findings][0] == "fleet.gpus_not_visible"  # triage order: step 1, the most severe first


def test_the_report_shows_the_fleets_findings_in_the_terminal_and_as_a_page() -> None:
    r = judged([node("a"), node("b"), node("c"), node("d", pcie_width=8.0, driver="570.86.15")])
    out = io.StringIO()
    render(r, Console(file=out, width=160))
    text = out.getvalue()
    assert "d: pcie_width 8 lanes against a fleet median of 16" in text and "[fleet.outlier · d]" in text
    assert "The NVIDIA driver differs across nodes" in text and "[fleet.drift · fleet]" in text
    html = fleet_page(r).render()
    assert 'data-finding="fleet.outlier"' in html and 'data-finding="fleet.drift"' in html
    assert "Below the fleet" in html and "1.4826" not in html  # the spread is the catalog's to say


def test_gputriage_rules_lists_the_fleets_findings() -> None:
    out = CliRunner().invoke(app, ["rules", "--json", "--command", "fleet"])
    assert out.exit_code == 0, out.output
    ids = {r["id"] for r in json.loads(out.stdout)["rules"]}
    assert ids == {"fleet.outlier", "fleet.drift", "fleet.node_failed", "fleet.gpus_not_visible"}
    assert all(catalog.lookup(i).commands == ("fleet",) for i in ids)  # type: ignore[union-attr]
    spread = catalog.lookup("fleet.outlier")
    assert spread is not None and f"{FLOOR.value:.0%} of the median" in spread.condition
