"""`fleet check` over recorded node answers, without Ray: a node Ray counts a GPU on whose driver sees none
(its check recorded on a machine with no NVIDIA driver: two critical findings) is shown as such, counted in
the idle GPUs and fails the command per --fail-on; two nodes on one host stay two nodes; an address where Ray
does not answer (a closed port, a plain TCP listener) ends in one line and exit 3."""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
import threading
from pathlib import Path

import msgspec
import pytest
from rich.console import Console
from typer.testing import CliRunner

import gputriage.api.fleet
from gputriage.api.fleet import REPLAY_ENV, on_node
from gputriage.cli.main import app
from gputriage.diagnosis.fleet.judge import judge
from gputriage.model.fleet import FleetReport, NodeResult
from gputriage.report.fleet_terminal import render
from gputriage.report.html_fleet import fleet_page

CPU = Path(__file__).parent / "fixtures" / "cpu"
GT = [sys.executable, "-m", "gputriage"]
NO_DRIVER_ID = "7be0e1c2a9d34f5b8e0c1d2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d"


def _recorded_nodes() -> list[NodeResult]:
    """The four H200 nodes of a fleet bench replayed on a local Ray cluster, as Ray counted them (1 GPU each)."""
    r = msgspec.json.decode((CPU / "fleet_replayed_h200.json").read_bytes(), type=FleetReport)
    for n in r.nodes:
        n.ray_gpus, n.hostname = 1.0, "192-0-2-2"
    return r.nodes


def _no_driver_node(monkeypatch) -> NodeResult:
    """What the node task sends back from a node whose check sees no driver, with what Ray says of the node."""
    monkeypatch.setenv(REPLAY_ENV, str(CPU / "snapshot_driver_missing.json"))
    n = msgspec.json.decode(on_node(False), type=NodeResult)
    n.node_id, n.address, n.hostname, n.ray_gpus = NO_DRIVER_ID, "192.0.2.9", "node-e", 1.0
    return n


def _judged(nodes: list[NodeResult], price: float | None = 3.0) -> FleetReport:
    r = FleetReport(address="192.0.2.2:6379", nodes=nodes)
    judge(r, price, "USD")
    return r


def _text(r: FleetReport) -> str:
    out = io.StringIO()
    render(r, Console(file=out, width=160))
    return out.getvalue()


def test_a_gpu_the_driver_cannot_see_is_shown_counted_and_idle(monkeypatch):
    e = _no_driver_node(monkeypatch)
    assert e.ok and e.figures is not None and e.figures.gpus == 0  # the check ran and listed no GPU
    assert {f.id for f in e.findings if f.severity.value == "critical"} >= {"driver.missing"}
    r = _judged(_recorded_nodes() + [e])
    (node,) = [n for n in r.nodes if n.node_id == NO_DRIVER_ID]
    assert node.gpus_not_visible == 1 and node.name == "node-e"
    assert r.waste is not None and r.waste.gpus == 5 and r.waste.not_visible == 1  # as Ray counts them
    # the four H200s at 93.6% SM activity and one GPU doing nothing
    assert r.waste.busy_pct == pytest.approx(4 * 93.6 / 5, abs=0.1)
    assert r.waste.idle_cost_per_hour == pytest.approx(r.waste.idle_gpu_equivalents * 3, abs=0.02)
    text = _text(r)
    row = next(line for line in text.splitlines() if line.startswith("node-e"))
    assert "1 GPU not visible to the driver" in row and "0 x ?" not in text
    assert "of 5 GPUs" in text and "1 not visible to the driver, counted idle" in text
    assert "driver.missing: node-e" in text
    page = fleet_page(r).render()
    assert "1 GPU not visible to the driver" in page and "0 x ?" not in page


def test_two_nodes_on_one_host_stay_two_nodes():
    a, b, c, d = _recorded_nodes()
    assert a.figures is not None and b.figures is not None
    b.figures.hostname = "node-a"  # two raylets on one machine
    b.figures.driver = "575.51.03"
    r = _judged([a, b, c, d])
    names = {n.node_id: n.name for n in r.nodes}
    assert names[a.node_id] == f"node-a ({a.node_id[:8]})" and names[b.node_id] == f"node-a ({b.node_id[:8]})"
    assert names[c.node_id] == "node-c"  # a host of its own keeps its plain name
    assert r.findings_by_id["clocks.power_capped"].count(names[a.node_id]) == 1
    assert set(r.findings_by_id["clocks.power_capped"]) == set(names.values())  # four nodes, not three
    drift = {x.key: x.values for x in r.drift}
    assert drift["driver"]["575.51.03"] == [names[b.node_id]]
    assert r.waste is not None and r.waste.gpus == 4
    text = _text(r)
    assert text.count("node-a (") >= 2 and a.node_id[:8] in text and b.node_id[:8] in text


def _fleet_cli(monkeypatch, nodes: list[NodeResult], *args: str):
    """`gputriage fleet check` with the cluster's answers given (Ray itself is tested in test_fleet.py)."""
    monkeypatch.setattr(gputriage.api.fleet, "run_on_nodes", lambda *_a, **_k: (nodes, []))
    return CliRunner().invoke(app, ["fleet", "check", "--ray", "192.0.2.2:6379", "--no-store", *args])


def test_a_node_with_critical_findings_fails_the_command_per_fail_on(monkeypatch):
    a, b, *_ = _recorded_nodes()
    e = _no_driver_node(monkeypatch)
    assert _fleet_cli(monkeypatch, [a, b]).exit_code == 0  # info findings only, two nodes: nothing to fail
    failed = _fleet_cli(monkeypatch, [a, b, e])
    assert failed.exit_code == 1, failed.output
    words = " ".join(failed.output.split())  # at 80 columns, as a terminal or a pipe gets it
    assert "of 3 GPUs" in words and "(1 not visible to the driver, counted idle)" in words and "0 x ?" not in words
    assert _fleet_cli(monkeypatch, [a, b, e], "--fail-on", "never").exit_code == 0
    assert _fleet_cli(monkeypatch, [a, b], "--fail-on", "info").exit_code == 1
    as_json = _fleet_cli(monkeypatch, [a, b, e], "--json")
    assert as_json.exit_code == 1
    rep = json.loads(as_json.stdout)
    assert rep["waste"]["gpus"] == 3 and rep["waste"]["not_visible"] == 1
    assert [n["gpus_not_visible"] for n in rep["nodes"] if n["node_id"] == NO_DRIVER_ID] == [1]


@pytest.fixture
def silent_port():
    """A plain TCP listener that accepts and never says anything (as a port that is not Ray's)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(srv.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield srv.getsockname()[1]
    srv.close()
    for c in held:
        c.close()


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    return port


@pytest.mark.parametrize("where", ["silent", "closed"])
def test_an_address_where_ray_does_not_answer_ends_in_one_line_and_exit_3(where, silent_port):
    pytest.importorskip("ray")
    port = silent_port if where == "silent" else _closed_port()
    r = subprocess.run(
        GT + ["fleet", "check", "--ray", f"127.0.0.1:{port}", "--no-store"], capture_output=True, text=True, timeout=60
    )  # Ray's own connect retried for minutes, printing its log lines
    assert r.returncode == 3, r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"gputriage: cannot join the Ray cluster at 127.0.0.1:{port}")
    assert r.stdout == ""
