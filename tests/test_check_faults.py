"""The recorded H200 through the collectors and rules: healthy stays quiet, each fault is named."""

from __future__ import annotations

from conftest import host_files
from gputriage.diagnosis.check import evaluate
from gputriage.model.finding import Severity
from gputriage.model.reading import Unavailable
from gputriage.testing.fake_nvml import FakeNvml


def ids(snapshot, at_least: Severity = Severity.info) -> set[str]:
    return {f.id for f in evaluate(snapshot) if f.severity >= at_least}


def test_recorded_h200_reads_as_a_healthy_h200(h200, collect):
    snap = collect(h200)
    assert snap.get("gpu.count") == 1
    assert snap.get("gpu.0.name") == "NVIDIA H200"
    assert snap.get("gpu.0.pci.device_id") == "0x2335"
    assert snap.get("gpu.0.pcie.link_width.current") == 16 and snap.get("gpu.0.pcie.link_gen.max") == 5
    assert snap.get("gpu.0.compute_capability") == "9.0"
    assert snap.get("gpu.0.memory.total_bytes") > 140 * 10**9
    assert snap.get("gpu.0.gpm.sm_active_pct") == 0.0
    assert snap.get("driver.cuda_version") == "13.0"
    assert snap.get("host.cpu.per_core_busy_pct") == [2.0, 4.0, 2.0, 4.0]
    assert ids(snap, Severity.warn) == set()


def test_no_driver_is_one_critical_finding_and_the_host_is_still_read(h200, collect):
    snap = collect(h200.no_driver())
    assert isinstance(snap.get("driver.nvml"), Unavailable) and snap.get("driver.nvml").reason == "no_driver"
    assert "driver.missing" in ids(snap, Severity.critical)
    assert snap.get("host.mem.total_bytes") == 131072000 * 1024


def test_driver_library_mismatch(h200, collect):
    assert "driver.version_mismatch" in ids(collect(h200.driver_mismatch()), Severity.critical)


def test_gpu_lost_mid_read_degrades_that_gpu_only(h200, collect):
    snap = collect(h200.gpu_lost(0, after_calls=4))
    assert snap.get("gpu.0.name") == "NVIDIA H200"  # read before it was lost
    assert snap.get("gpu.0.power.draw_mw").reason == "gpu_lost"
    assert snap.get("host.cpu.count") == 4
    assert "gpu.lost" in ids(snap, Severity.critical)


def test_link_trained_x8_under_load(h200, collect):
    snap = collect(h200.link(0, width=8))
    found = [f for f in evaluate(snap) if f.id == "pcie.link_width_degraded"]
    assert len(found) == 1 and found[0].severity == Severity.warn
    assert found[0].evidence["gpu.0.pcie.link_width"] == 8


def test_thermal_slowdown_and_hw_slowdown(h200, collect):
    snap = collect(h200.clock_reasons(0, 0x20 | 0x8))
    assert {"clocks.thermal_slowdown", "clocks.hw_slowdown"} <= ids(snap, Severity.warn)


def test_power_cap_at_the_limit_is_information_not_a_fault(h200, collect):
    h200.clock_reasons(0, 0x4).set("nvmlDeviceGetPowerUsage", 0, 690_000)
    found = {f.id: f for f in evaluate(collect(h200))}
    assert found["clocks.power_capped"].severity == Severity.info
    assert found["clocks.power_capped"].evidence["draw_pct_of_limit"] == 98.6


def test_another_process_holding_vram_is_named(h200, collect, tmp_path):
    h200.add_process(0, 4242, 120 * 2**30).add_process(0, 4343, 10 * 2**30)
    files = host_files(**{"/proc/4242/status": "Name:\tpython\nUid:\t1000\t1000\t1000\t1000\n"})
    snap = collect(h200, files)
    procs = snap.get("gpu.0.processes")
    assert [p["pid"] for p in procs] == [4242, 4343]
    assert procs[0]["name"] == "python" and procs[1]["visible"] is False
    found = ids(snap)
    assert {"vram.shared_by_processes", "vram.processes_outside_namespace", "vram.nearly_full"} <= found


def test_xid_in_kernel_log(h200, collect):
    log = (
        "[ 10.0] NVRM: Xid (PCI:0000:18:00): 79, pid=1234, GPU has fallen off the bus.\n"
        "[ 11.0] NVRM: Xid (PCI:0000:18:00): 13, pid=99, name=python, Graphics Exception\n"
    )
    found = {f.subject: f for f in evaluate(collect(h200, kernel_log=log)) if f.id == "xid.event"}
    assert found["xid.79"].severity == Severity.critical and found["xid.79"].evidence["blame"] == "platform"
    assert found["xid.13"].severity == Severity.warn and found["xid.13"].evidence["blame"] == "application"
    assert "pcie.fallen_off_bus" in ids(collect(FakeNvml(h200.source), kernel_log=log), Severity.critical)


def test_kernel_log_denied_asks_for_privileges(h200, collect):
    snap = collect(h200, kernel_log=Unavailable("no_permission", "dmesg_restrict"))
    found = [f for f in evaluate(snap) if f.id == "kernel.log_unreadable"]
    assert found and "privileges" in found[0].decision


def test_not_supported_calls_become_unavailable_not_crashes(h200, collect):
    snap = collect(h200.not_supported(r"Ecc|Remapped|Violation|Pcie|gpm"))
    assert snap.get("gpu.0.ecc.enabled").reason == "not_supported"
    assert snap.get("gpu.0.gpm.sm_active_pct").reason == "not_supported"
    assert ids(snap, Severity.warn) == set()


def test_single_saturated_core_with_idle_others(h200, collect):
    stat = [
        "cpu  0 0 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0\ncpu2 0 0 0 0 0 0 0 0\n",
        "cpu  100 0 0 200 0 0 0 0\ncpu0 100 0 0 0 0 0 0 0\ncpu1 0 0 0 100 0 0 0 0\ncpu2 0 0 0 100 0 0 0 0\n",
    ]
    f = [f for f in evaluate(collect(h200, host_files(**{"/proc/stat": stat}))) if f.id == "cpu.single_core_saturated"]
    assert f and f[0].evidence["hot_cores"] == [0]


def test_swap_in_use_with_major_faults(h200, collect):
    files = host_files(
        **{"/proc/meminfo": MEMINFO_SWAP, "/proc/vmstat": ["pgmajfault 0\npswpin 0\n", "pgmajfault 500\npswpin 200\n"]}
    )
    found = {f.id: f for f in evaluate(collect(h200, files))}
    assert found["mem.swapping"].severity == Severity.warn
    assert found["mem.swapping"].evidence["host.vm.major_faults_per_s"] == 1000.0


MEMINFO_SWAP = "MemTotal: 1000000 kB\nMemAvailable: 50000 kB\nSwapTotal: 8000000 kB\nSwapFree: 2000000 kB\n"


def test_container_without_devices_and_small_shm(h200, collect):
    snap = collect(
        h200.no_driver(),
        host_files(**{"/proc/1/cgroup": "0::/docker/abc\n"}),
        dev_nodes=(),
        statvfs={"/dev/shm": {"total_bytes": 64 * 2**20, "free_bytes": 64 * 2**20}},
    )
    assert snap.get("host.container.kind") == "docker"
    assert {"container.no_gpu_devices", "container.shm_small"} <= ids(snap, Severity.warn)


def test_costly_environment_variables(h200, collect, make_host):
    snap = collect(h200, environ={"CUDA_LAUNCH_BLOCKING": "1", "CUDA_VISIBLE_DEVICES": ""})
    assert {"env.costly_variable", "env.gpus_hidden"} <= ids(snap, Severity.warn)


def test_no_link_load_on_a_gpu_in_exclusive_mode(h200, make_host):
    from gputriage.collect import collect_snapshot

    h200.set("nvmlDeviceGetComputeMode", 0, 3)  # exclusive process
    snap = collect_snapshot(h200, make_host(), window_s=0.1, load_ms=200, use_framework=False)
    assert "exclusive" in snap.get("gpu.0.pcie.link_width.loaded").detail


def test_one_of_two_gpus_lost_mid_read_degrades_only_that_gpu(h200, collect):
    snap = collect(h200.add_gpu_like(0).gpu_lost(1, after_calls=3))
    assert snap.get("gpu.count") == 2
    assert isinstance(snap.get("gpu.0.power.draw_mw"), int) and snap.get("gpu.0.name") == "NVIDIA H200"
    assert snap.get("gpu.1.power.draw_mw").reason == "gpu_lost"
    lost = [f for f in evaluate(snap) if f.id == "gpu.lost"]
    assert [f.subject for f in lost] == ["gpu.1"]
