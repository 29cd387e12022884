"""`gputriage fleet check|bench` on a real local Ray cluster (a head and worker raylets on 127.0.0.1, CPU only),
each node replaying a recorded H200 snapshot and quick bench, or a variation of them: a link degraded to x8,
a low clock with another driver and a slow bf16 rate, a node whose check fails, a node Ray gives a GPU to whose
driver sees none (a check recorded on a machine with no NVIDIA driver), and two nodes reporting one host. The
aggregation, the outliers, the drift, the failed node and the invisible GPU run end to end on real Ray."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "h200"
NO_DRIVER = Path(__file__).parent / "fixtures" / "cpu" / "snapshot_driver_missing.json"
GT = [sys.executable, "-m", "gputriage"]

try:
    import ray  # noqa: F401
    from ray.cluster_utils import Cluster
except ImportError:
    assert os.environ.get("GPUTRIAGE_REQUIRE_RAY") != "1", "ray is needed (pip install gputriage[fleet])"
    pytest.skip("ray is not installed (pip install gputriage[fleet])", allow_module_level=True)


def _variant(tmp: Path, name: str, facts: dict, bench_scale: float = 1.0, host: str = "") -> tuple[str, str]:
    snap = json.loads((FIXTURES / "snapshot_busy.json").read_text())
    snap["hostname"] = host or name
    for f in snap["facts"]:
        if f["name"] in facts:
            f["value"] = facts[f["name"]]
    bench = json.loads((FIXTURES / "bench_h200_quick.json").read_text())
    for r in bench["results"]:
        if r["name"] == "matmul.bf16":
            r["value"] = round(r["value"] * bench_scale, 1)
    (tmp / f"{name}.json").write_text(json.dumps(snap))
    (tmp / f"{name}.bench.json").write_text(json.dumps(bench))
    return str(tmp / f"{name}.json"), str(tmp / f"{name}.bench.json")


def _env(paths: tuple[str, str]) -> dict:
    return {"GPUTRIAGE_FLEET_REPLAY": paths[0], "GPUTRIAGE_FLEET_REPLAY_BENCH": paths[1]}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fleet")
    healthy = _variant(tmp, "node-a", {})
    healthy_b = _variant(tmp, "node-b", {}, host="node-a")  # a second raylet on node-a's machine
    narrow = _variant(tmp, "node-c", {"gpu.0.pcie.link_width.current": 8, "gpu.0.pcie.link_width.loaded": 8})
    slow = _variant(tmp, "node-d", {"gpu.0.clock.sm_max_mhz": 1410, "driver.version": "570.86.15"}, bench_scale=0.6)
    c = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 0, "env_vars": _env(healthy)}
    )  # no GPU: not checked
    for paths in (healthy, healthy_b, narrow, slow):
        c.add_node(num_cpus=1, num_gpus=1, env_vars=_env(paths))
    c.add_node(num_cpus=1, num_gpus=1, env_vars={"GPUTRIAGE_FLEET_REPLAY": str(tmp / "missing.json")})
    c.add_node(num_cpus=1, num_gpus=1, env_vars={"GPUTRIAGE_FLEET_REPLAY": str(NO_DRIVER)})
    c.wait_for_nodes()
    yield c
    c.shutdown()


def test_fleet_bench_names_the_off_nodes_the_drift_and_the_failed_one(cluster, tmp_path):
    r = subprocess.run(
        GT
        + ["fleet", "bench", "--ray", cluster.address, "--json", "--price", "3", "--store", str(tmp_path / "s.sqlite")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 1, r.stderr[-3000:]  # an outlier and a failed node
    rep = json.loads(r.stdout)
    assert rep["schema"] == "gputriage.fleet" and rep["bench"] is True
    import jsonschema

    jsonschema.validate(rep, json.loads((Path(__file__).parent.parent / "schemas" / "fleet.schema.json").read_text()))
    nodes = rep["nodes"]
    assert len(nodes) == 6 and len({n["node_id"] for n in nodes}) == 6  # the GPU nodes; the head has none
    failed = [n for n in nodes if not n["ok"]]
    assert len(failed) == 1 and "missing.json" in failed[0]["error"]
    by_name = {n["name"]: n for n in nodes if n["ok"]}
    shared = sorted(name for name in by_name if name.startswith("node-a ("))  # one host, two nodes, two names
    assert len(shared) == 2 and {by_name[x]["node_id"][:8] for x in shared} == {x[8:16] for x in shared}
    assert set(by_name) == {*shared, "node-c", "node-d", "node-e"}
    assert by_name["node-c"]["figures"]["pcie_width"] == 8 and by_name[shared[0]]["figures"]["pcie_width"] == 16
    unseen = by_name["node-e"]  # Ray gives it a GPU; its driver lists none
    assert unseen["ray_gpus"] == 1 and unseen["figures"].get("gpus", 0) == 0 and unseen["gpus_not_visible"] == 1
    assert "driver.missing" in {f["id"] for f in unseen["findings"]}
    out = {(o["node"], o["figure"]) for o in rep["outliers"]}
    assert out == {("node-c", "pcie_width"), ("node-d", "sm_clock_max_mhz"), ("node-d", "bf16_tflops")}
    drift = {d["key"]: d["values"] for d in rep["drift"]}
    assert set(drift) == {"driver"} and drift["driver"]["570.86.15"] == ["node-d"]
    fleet = {(f["id"], f["subject"]) for f in rep["findings"]}  # the same facts, as the catalog's findings
    assert fleet == {
        ("fleet.outlier", "node-c"),
        ("fleet.outlier", "node-d"),
        ("fleet.drift", "fleet"),
        ("fleet.node_failed", failed[0]["name"]),
        ("fleet.gpus_not_visible", "node-e"),
    }
    assert all(f["verify"] == f"gputriage fleet bench --ray {cluster.address}" for f in rep["findings"])
    assert "node-c" in rep["findings_by_id"].get("pcie.link_width_degraded", [])
    assert set(shared) <= set(rep["findings_by_id"]["clocks.power_capped"])
    assert rep["findings_by_id"]["driver.missing"] == ["node-e"]
    w = rep["waste"]
    assert w["gpus"] == 5 and w["not_visible"] == 1 and w["measure"] == "SM activity"  # as Ray counts them
    assert w["idle_cost_per_hour"] == pytest.approx(w["idle_gpu_equivalents"] * 3, abs=0.02)
    runs = json.loads(
        subprocess.run(
            GT + ["runs", "--store", str(tmp_path / "s.sqlite"), "--json"], capture_output=True, text=True
        ).stdout
    )["runs"]
    assert runs[0]["kind"] == "fleet"
    page = tmp_path / "fleet.html"
    r = subprocess.run(
        GT + ["report", str(runs[0]["id"]), "--store", str(tmp_path / "s.sqlite"), "-o", str(page)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    html = page.read_text()  # the kept fleet check, as a page: the findings and the table of the nodes below
    assert "Below the fleet" in html and 'data-finding="fleet.outlier"' in html


def test_fleet_check_in_the_terminal_and_a_bad_address(cluster):
    r = subprocess.run(
        GT + ["fleet", "check", "--ray", cluster.address, "--no-store"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "120"},
    )
    assert r.returncode == 1, r.stderr[-3000:]
    assert "node-c: pcie_width 8 lanes against a fleet median of 16" in r.stdout and "fleet.outlier" in r.stdout
    assert "The NVIDIA driver differs across nodes: " in r.stdout and "fleet.drift" in r.stdout
    assert "did not report" in r.stdout and "failed" in r.stdout
    assert "1 GPU not visible to the driver" in r.stdout and "0 x ?" not in r.stdout
    assert "of 5 GPUs" in r.stdout
    bad = subprocess.run(
        GT + ["fleet", "check", "--ray", "127.0.0.1:1", "--no-store"], capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 3 and bad.stderr.startswith("gputriage: ") and "Traceback" not in bad.stderr
