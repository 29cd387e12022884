"""`bench` on a machine without a GPU: host probes, cleanup, the spec database, bands and findings."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gputriage.diagnosis import bench as judge
from gputriage.model.probe import ProbeResult
from gputriage.model.specs import match
from gputriage.probes import bench as b
from gputriage.probes import disk

GT = [sys.executable, "-m", "gputriage"]


def test_bench_specs_json():
    out = json.loads(subprocess.run(GT + ["bench", "--specs", "--json"], capture_output=True, text=True).stdout)
    names = {s["name"] for s in out["specs"]}
    assert {"NVIDIA H200", "NVIDIA H100 SXM5 80GB", "NVIDIA L4", "NVIDIA GeForce RTX 4090", "NVIDIA T4"} <= names


def test_disk_probe_measures_and_removes_its_file(tmp_path):
    results = disk.probe(tmp_path, size_bytes=8 << 20, seconds=0.3)
    assert [r.name for r in results] == ["disk.seq_read", "disk.rand_read_4k"]
    assert all(r.value > 0 for r in results) and results[0].detail["cache"]
    assert list(tmp_path.iterdir()) == []


def test_disk_probe_cleans_up_on_ctrl_c(tmp_path, monkeypatch):
    def interrupted(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(disk, "_builtin", interrupted)
    monkeypatch.setattr(disk.shutil, "which", lambda _name: None)
    with pytest.raises(KeyboardInterrupt):
        disk.probe(tmp_path, size_bytes=4 << 20, seconds=0.1)
    assert list(tmp_path.iterdir()) == []


def test_disk_probe_refuses_what_it_cannot_do(tmp_path):
    with pytest.raises(ValueError, match="not a directory"):
        disk.probe(tmp_path / "missing")
    with pytest.raises(ValueError, match="free"):
        disk.probe(tmp_path, size_bytes=1 << 60)


def test_host_memcpy_is_a_probe_result():
    r = disk.host_memcpy(16 << 20, repeats=3)
    assert r.unit == "GB/s" and r.value > 0 and r.detail["counted"] == "bytes read + bytes written"


def test_bench_without_a_gpu_runs_the_host_probes(tmp_path):
    r = subprocess.run(
        GT + ["bench", "--quick", "--json", "--disk", str(tmp_path), "--store", str(tmp_path / "s.db")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert {x["name"] for x in rep["results"]} >= {"disk.seq_read", "disk.rand_read_4k", "host.memcpy"}
    assert any(e["probe"] == "gpu" for e in rep["errors"])
    again = json.loads(
        subprocess.run(
            GT + ["bench", "--quick", "--json", "--no-disk", "--store", str(tmp_path / "s.db")],
            capture_output=True,
            text=True,
        ).stdout
    )
    assert again["results"][0]["change_pct"] is not None  # compared with the previous bench on this machine
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".gputriage")] == []


def test_gpu_child_says_why_it_cannot_measure_without_cuda():
    pytest.importorskip("torch")
    rows = b.run_gpu_child(True, lambda row: None)
    assert rows and "error" in rows[0] and "CUDA" in rows[0]["error"]


def test_references_bands_and_findings():
    h200 = match("0x2335")
    assert b.reference("matmul.bf16", h200, None) == 989.4
    assert b.reference("memory.copy", h200, None) == 4800
    assert b.reference("pcie.h2d_pinned", None, (5, 16)) == 63.0
    low = ProbeResult("pcie.h2d_pinned", 24.0, "GB/s", 63.0, {"clock_event_reasons": []})
    ok = ProbeResult("matmul.bf16", 780.0, "TFLOP/s", 989.4, {"clock_event_reasons": ["sw_power_cap"]})
    capped = ProbeResult("matmul.bf16", 400.0, "TFLOP/s", 989.4, {"clock_event_reasons": ["sw_power_cap"]})
    found = {f.id: f for f in judge.findings([low, ok, capped], link_now=(5, 8))}
    assert set(found) == {"bench.pcie_bandwidth_low", "bench.matmul_slow"}
    assert found["bench.matmul_slow"].evidence["probe"] == "matmul.bf16"
    assert "below its capability" in found["bench.pcie_bandwidth_low"].cause
    assert "power limit" in found["bench.matmul_slow"].cause
    remote = judge.findings([low], link_now=(5, 16))[0]
    assert "NUMA" in remote.cause


def test_allreduce_bus_bandwidth_runs_one_process_per_rank_on_gloo():
    pytest.importorskip("torch")
    rows = b.run_collectives(
        lambda row: None, extra=("--backend", "gloo", "--world", "2", "--max-bytes", str(4 << 20), "--repeats", "2")
    )
    assert rows[0]["probe"] == "allreduce.busbw" and rows[0]["value"] > 0
    sizes = rows[0]["detail"]["sizes"]
    assert [x["bytes"] for x in sizes] == [1 << 20, 4 << 20]
    assert all(x["busbw_gbs"] == pytest.approx(x["algbw_gbs"] * 2 * (2 - 1) / 2, abs=0.01) for x in sizes)


def test_allreduce_needs_two_gpus_under_nccl():
    pytest.importorskip("torch")
    rows = b.run_collectives(lambda row: None)
    assert "error" in rows[0] and "2 GPUs" in rows[0]["error"]


def test_numa_layout_needs_several_nodes(tmp_path):
    (tmp_path / "sys/devices/system/node/node0").mkdir(parents=True)
    (tmp_path / "sys/bus/pci/devices/0000:18:00.0").mkdir(parents=True)
    (tmp_path / "sys/bus/pci/devices/0000:18:00.0/numa_node").write_text("1\n")
    assert b.numa_layout("0000:18:00.0", str(tmp_path)) is None  # one node: nothing to compare
    (tmp_path / "sys/devices/system/node/node1").mkdir()
    assert b.numa_layout("0000:18:00.0", str(tmp_path)) == (1, [0, 1])
    assert judge.band("pcie.h2d_pinned_node0") == (0.70, 1.0)


def test_another_process_on_the_gpu_makes_every_gpu_figure_a_share():
    from pathlib import Path

    from gputriage.testing.fake_nvml import FakeNvml

    records = json.loads((Path(__file__).parent / "fixtures/h200/snapshot_idle.json").read_text())["raw"]["nvml"]
    nvml = FakeNvml(records)
    assert b.others_on_gpus(nvml, [0]) == []
    nvml.add_process(0, 4242, 2 << 30).add_process(0, 777, 1 << 30)
    others = b.others_on_gpus(nvml, [0], exclude={777})
    assert others == [{"gpu": 0, "pid": 4242, "used_bytes": 2 << 30}]
    capped = ProbeResult("matmul.bf16", 400.0, "TFLOP/s", 989.4, {"clock_event_reasons": []})
    found = {f.id: f for f in judge.findings([capped], None, others)}
    assert set(found) == {"bench.gpu_shared", "bench.matmul_slow"}
    assert "4242" in found["bench.gpu_shared"].symptom and found["bench.gpu_shared"].severity.value == "warn"
    assert judge.findings([], None, []) == []


def _recorded(name: str) -> tuple[dict, list[ProbeResult]]:
    from pathlib import Path

    data = json.loads((Path(__file__).parent / "fixtures/h200" / name).read_text())
    return data, [
        ProbeResult(r["name"], r["value"], r["unit"], r["reference"], r["conditions"], r["detail"])
        for r in data["results"]
    ]


def _report(data: dict):
    """A recorded `bench --json` document (the first version's, with its results) as today's report."""
    import msgspec

    from gputriage.model.bench import BenchReport

    return msgspec.convert(dict(data, version=2), BenchReport)


def test_recorded_h200_bench_is_healthy_and_renders():
    import io

    from rich.console import Console

    from gputriage.report.bench_terminal import render

    data, results = _recorded("bench_h200.json")
    assert data["spec"] == "NVIDIA H200" and data["findings"] == [] and data["other_processes"] == []
    assert judge.findings(results, (5, 16)) == []  # every banded figure inside its band on a healthy H200
    by = {r.name: r for r in results}
    assert by["matmul.bf16"].detail["best_shape"][0] in (4096, 8192, 12288, 16384)
    assert by["memory.copy"].value >= 4000  # read + write, > 16x the L2
    buf = io.StringIO()
    render(_report(data), Console(file=buf, width=120))
    text = buf.getvalue()
    assert "matmul.bf16" in text and "756.3 TFLOP/s" in text and "sw_power_cap" in text


def test_change_since_the_last_bench_on_the_same_h200():
    _, now = _recorded("bench_h200.json")
    earlier, _ = _recorded("bench_h200_earlier.json")
    change = judge.compare(now, earlier["results"])
    assert change["matmul.bf16"] == round(100 * (756.3 - 778.2) / 778.2, 1)
    assert set(change) >= {"memory.copy", "pcie.h2d_pinned", "launch.latency"}


def test_recorded_two_gpu_bench_has_peer_copies_and_an_all_reduce():
    data, results = _recorded("bench_2xh200.json")
    by = {r.name: r for r in results}
    assert {"p2p.0to1", "p2p.1to0", "allreduce.busbw"} <= set(by)
    assert by["p2p.0to1"].value > 300 and by["allreduce.busbw"].value > 200  # NVLink between the two
    assert data["findings"] == []
