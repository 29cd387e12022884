"""Every rule: it fires on its scenario, and stays silent on the healthy H200 recording.

Each scenario is the recorded H200 snapshot with a few facts changed to what the fault looks like.
"""

from __future__ import annotations

import json

import pytest

from conftest import H200_SNAPSHOT
from gputriage.diagnosis.check import default_rules, evaluate
from gputriage.model.fact import Fact
from gputriage.model.finding import Severity
from gputriage.model.reading import Unavailable
from gputriage.model.snapshot import Snapshot

BASE = Snapshot.load(H200_SNAPSHOT)
BUSY = Snapshot.load(H200_SNAPSHOT.parent / "snapshot_busy.json")
G = "gpu.0."

SCENARIOS: dict[str, dict] = {
    "driver.missing": {
        "driver.nvml": Unavailable("no_driver", "NVML Shared Library Not Found"),
        "gpu.count": Unavailable("no_driver", ""),
    },
    "driver.version_mismatch": {"driver.nvml": Unavailable("driver_mismatch", "Driver/library version mismatch")},
    "gpu.lost": {G + "power.draw_mw": Unavailable("gpu_lost", "GPU is lost")},
    "container.no_gpu_devices": {"host.container.kind": "docker", "host.dev.nvidia_nodes": []},
    "env.costly_variable": {"env.costly": {"CUDA_LAUNCH_BLOCKING": "1"}},
    "env.gpus_hidden": {"env.CUDA_VISIBLE_DEVICES": ""},
    "gpu.compute_mode": {G + "compute_mode": "prohibited"},
    "gpu.mig_enabled": {G + "mig.enabled": True},
    "torch.arch_missing": {"torch.cuda.arch_list": ["sm_70", "sm_75", "sm_80", "sm_86"]},
    "torch.cuda_newer_than_driver": {"torch.cuda.build_version": "14.1"},
    "torch.cuda_unavailable": {"torch.cuda.available": False},
    "util.gpu_idle_with_processes": {
        G + "processes": [{"pid": 7, "used_bytes": 2**30, "visible": True}],
        G + "util.gpu_pct": 0,
    },
    "clocks.power_capped": {G + "clock.event_reasons": ["sw_power_cap"], G + "power.draw_mw": 695_000},
    "clocks.thermal_slowdown": {G + "clock.event_reasons": ["sw_thermal_slowdown"]},
    "power.limit_lowered": {G + "power.limit_enforced_mw": 400_000},
    "util.busy_but_sms_idle": {G + "util.gpu_pct": 99, G + "gpm.sm_active_pct": 24.1},
    "vram.nearly_full": {G + "memory.used_bytes": int(0.93 * 150754820096)},
    "vram.processes_outside_namespace": {G + "processes": [{"pid": 91234, "used_bytes": 2**30, "visible": False}]},
    "gpu.idle_held": {
        G + "processes": [
            {
                "pid": 9,
                "used_bytes": 20 * 2**30,
                "visible": True,
                "sm_util_pct": 0.0,
                "sm_util_window_s": 10.0,
                "age_s": 7200.0,
            }
        ]
    },
    "vram.shared_by_processes": {
        G + "processes": [
            {"pid": 7, "used_bytes": 2**30, "visible": True},
            {"pid": 8, "used_bytes": 2**30, "visible": True},
        ]
    },
    "container.shm_small": {"host.container.kind": "docker", "host.shm.total_bytes": 64 * 2**20},
    "cpu.cgroup_limited": {"host.cgroup.cpu_limit_cores": 2.0},
    "cpu.iowait": {"host.cpu.iowait_pct": 23.0},
    "cpu.pressure": {"host.psi.cpu.some_avg10_pct": 41.0},
    "cpu.saturated": {"host.cpu.median_core_busy_pct": 97.0},
    "cpu.single_core_saturated": {
        "host.cpu.per_core_busy_pct": [100.0] + [1.0] * 15,
        "host.cpu.median_core_busy_pct": 1.0,
    },
    "fs.low_space": {"host.fs.cwd.free_bytes": 2 * 2**30},
    "fs.slow_type": {"host.fs.cwd.fstype": "nfs4"},
    "fs.slow_reads": {"host.fs.cwd.seq_read_mbps": 180.0, "host.fs.cwd.rand_read_4k_iops": 350.0},
    "mem.low_available": {"host.mem.available_bytes": 2 * 2**30},
    "mem.pressure": {"host.psi.memory.some_avg10_pct": 30.0},
    "mem.swapping": {"host.swap.used_bytes": 8 * 2**30, "host.vm.major_faults_per_s": 900.0},
    "net.errors": {
        "host.net.interfaces": {
            "eth0": {
                "rx_bytes": 1,
                "rx_packets": 100000,
                "rx_errors": 0,
                "rx_drops": 421,
                "tx_bytes": 1,
                "tx_packets": 100000,
                "tx_errors": 0,
                "tx_drops": 0,
            }
        }
    },
    "numa.affinity_mismatch": {
        "host.numa.node_count": 2,
        "host.process.cpu_affinity": list(range(16, 32)),
        G + "cpu_affinity": list(range(0, 16)),
    },
    "clocks.hw_slowdown": {G + "clock.event_reasons": ["hw_power_brake_slowdown"]},
    "ecc.disabled": {G + "ecc.enabled": False},
    "ecc.remap_pending": {G + "remap.pending": True},
    "ecc.retired_pages_pending": {G + "retired_pages.pending": True},
    "ecc.uncorrected": {G + "ecc.volatile_uncorrected": 2},
    "gpu.persistence_off": {G + "persistence_mode": False},
    "kernel.log_unreadable": {"kernel.xid_events": Unavailable("no_permission", "dmesg_restrict")},
    "kernel.nvrm_errors": {"kernel.nvrm_errors": 3},
    "pcie.aer_errors": {"kernel.aer_errors": {"count": 2, "lines": ["pcieport 0000:00:01.0: AER: Corrected error"]}},
    "pcie.fallen_off_bus": {"kernel.fallen_off_bus": 1},
    "pcie.link_gen_degraded": {G + "pcie.link_gen.loaded": 3},
    "pcie.link_width_degraded": {G + "pcie.link_width.loaded": 8},
    "pcie.replays": {G + "pcie.replay_count": 5000},
    "thermal.near_slowdown": {G + "temperature_c": 86},
    "thermal.violation_time": {G + "violation.thermal_ns": 12 * 10**9},
    "xid.event": {
        "kernel.xid_events": [
            {"code": 48, "pci": "0000:00:06.0", "meaning": "Double-bit ECC error", "blame": "hardware", "text": "DBE"}
        ]
    },
}


def with_facts(snap: Snapshot, changes: dict) -> Snapshot:
    facts = [Fact(f.name, changes[f.name], f.source) if f.name in changes else f for f in snap.facts]
    names = {f.name for f in snap.facts}
    facts += [Fact(k, v, "scenario") for k, v in changes.items() if k not in names]
    return Snapshot(facts=tuple(facts), taken_at=snap.taken_at, hostname=snap.hostname)


def test_every_rule_has_a_scenario():
    assert {r.id for r in default_rules()} == set(SCENARIOS)
    assert len(SCENARIOS) >= 30


@pytest.mark.parametrize("rule_id", sorted(SCENARIOS))
def test_rule_fires_on_its_scenario(rule_id):
    rule = next(r for r in default_rules() if r.id == rule_id)
    found = rule.evaluate(
        __import__("gputriage.diagnosis.check.base", fromlist=["Evidence"]).Evidence(
            with_facts(BASE, SCENARIOS[rule_id])
        )
    )
    assert found, f"{rule_id} did not fire on its scenario"
    for f in found:
        assert f.evidence and f.decision and 1 <= f.step <= 5


@pytest.mark.parametrize("rule_id", sorted(SCENARIOS))
def test_rule_is_silent_on_the_healthy_h200(rule_id):
    rule = next(r for r in default_rules() if r.id == rule_id)
    from gputriage.diagnosis.check.base import Evidence

    assert rule.evaluate(Evidence(BASE)) == []


def test_the_busy_h200_recording_raises_nothing_above_info():
    found = evaluate(BUSY)
    # 690 W of 700 W under bf16 GEMMs, and the one Python thread feeding the GPU: both expected
    assert {f.id for f in found} == {"clocks.power_capped", "cpu.single_core_saturated"}
    assert all(f.severity <= Severity.info for f in found)


def test_replay_matches_what_check_said_on_the_h200():
    recorded = json.loads((H200_SNAPSHOT.parent / "check_idle_recorded.json").read_text())
    assert [f.to_json() for f in evaluate(BASE)] == recorded["findings"]
