"""Who holds each GPU: each process's container and pod from its cgroup path and environment, its user and age,
its share of the GPU's time (NVML per-process utilization), and a process holding memory idle named as such."""

from __future__ import annotations

import json
import time
from pathlib import Path

import msgspec
import pytest
from rich.console import Console
from typer.testing import CliRunner

from conftest import host_files
from gputriage.backends.cgroup import cgroup_path, container_of, owner, with_environ
from gputriage.backends.host import environ_values
from gputriage.cli.main import app
from gputriage.cli.watch import frame
from gputriage.collect import collect_snapshot
from gputriage.diagnosis.check import evaluate
from gputriage.diagnosis.run.judge import judge
from gputriage.diagnosis.thresholds import IDLE_HELD_SM
from gputriage.model.owner import Container
from gputriage.model.reading import Unavailable
from gputriage.model.run import GpuStatic, RunMeta
from gputriage.model.sample import GpuSample, Sample
from gputriage.model.snapshot import Snapshot
from gputriage.sampling.holders import Holders
from gputriage.sampling.idle_streaks import IDLE_PCT
from gputriage.sampling.sampler import Cadences, Sampler
from gputriage.sampling.session import replay
from gputriage.testing.fake_host import FakeHost
from gputriage.testing.fake_nvml import FakeNvml
from gputriage.testing.stream_nvml import StreamNvml

SCENARIOS = json.loads((Path(__file__).parent / "fixtures" / "h200" / "scenario_samples.json").read_text())

CGROUPS = Path(__file__).parent / "fixtures" / "gpu_holders" / "cgroup"
CID = "4f1c9a7e2b3d5f60718293a4b5c6d7e8f9012a3b4c5d6e7f8091a2b3c4d5e6f7"
CID2 = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a29180716f5e4d3c2b1a09f8e7d6c5b"


@pytest.mark.parametrize(
    "name, runtime, cid, pod_uid, qos",
    [
        ("k8s_systemd_v2_containerd_burstable", "containerd", CID, "7a3f2c1e-5b4d-4e6f-8a9b-0c1d2e3f4a5b", "burstable"),
        ("k8s_systemd_v2_crio_guaranteed", "cri-o", CID2, "2b6e9d0c-1f3a-4c5e-9d7b-6a8c0e2f4d61", "guaranteed"),
        ("k8s_cgroupfs_v1_docker_besteffort", "cri", CID, "0f5e4b4a-5d0b-4b6f-9a4c-2f3f0e1d2c3b", "besteffort"),
        ("k8s_cgroupfs_v2_guaranteed", "cri", CID, "5c2d8e1f-3a4b-4c6d-8e0f-1a2b3c4d5e6f", "guaranteed"),
        ("kind_node_v2", "containerd", CID2, "3e1a9c7b-2d4f-4a6b-8c0d-e2f4a6b8c0d1", "besteffort"),
        ("docker_cgroupfs_v1", "docker", CID2, None, None),
        ("docker_systemd_v2", "docker", CID2, None, None),
        ("podman_rootless_v2", "podman", CID, None, None),
        ("podman_conmon_v2", None, None, None, None),  # the runtime's monitor, not a container's process
        ("host_login_session_v2", None, None, None, None),
        ("inside_cgroup_namespace_v2", None, None, None, None),
    ],
)
def test_the_container_and_pod_are_read_from_each_runtimes_cgroup_path(name, runtime, cid, pod_uid, qos):
    path = cgroup_path((CGROUPS / name).read_text())
    c = container_of(path)
    assert (c.runtime, c.id, c.pod_uid, c.qos) == (runtime, cid, pod_uid, qos)
    assert c.cgroup == path


def test_a_hybrid_v1_host_takes_the_controllers_path_not_the_unified_root():
    text = (CGROUPS / "k8s_cgroupfs_v1_docker_besteffort").read_text()
    assert text.rstrip().endswith("0::/")
    assert cgroup_path(text) == f"/kubepods/besteffort/pod0f5e4b4a-5d0b-4b6f-9a4c-2f3f0e1d2c3b/{CID}"
    assert cgroup_path("") is None
    assert cgroup_path("0::/\n") == "/"


def test_the_pod_comes_from_the_downward_api_else_the_hostname_inside_kubernetes():
    pod = Container(cgroup="/kubepods/x", pod_uid="u")
    named = with_environ(
        pod, {"POD_NAME": "train-7f9", "POD_NAMESPACE": "ml", "CONTAINER_NAME": "trainer", "HOSTNAME": "other"}
    )
    assert (named.pod, named.namespace, named.name) == ("train-7f9", "ml", "trainer")
    by_host = with_environ(
        Container(cgroup="/"), {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "HOSTNAME": "web-0"}, namespace_file="serving\n"
    )
    assert (by_host.pod, by_host.namespace) == ("web-0", "serving")
    # outside Kubernetes a host name is no pod's
    assert with_environ(Container(cgroup="/"), {"HOSTNAME": "gpu-box"}).pod is None


def test_only_the_asked_variables_of_an_environment_are_read_and_none_is_recorded(tmp_path):
    (tmp_path / "proc" / "42").mkdir(parents=True)
    (tmp_path / "proc" / "42" / "environ").write_bytes(
        b"AWS_SECRET_ACCESS_KEY=hunter2\0POD_NAME=p-1\0HOME=/root\0BROKEN\0"
    )
    host = FakeHost(tmp_path)
    assert host.process_environ(42, ("POD_NAME", "POD_NAMESPACE")) == {"POD_NAME": "p-1"}
    assert environ_values(b"A=1\0B=2=3\0", ("B",)) == {"B": "2=3"}
    assert "hunter2" not in repr(host.records)
    assert host.process_environ(43, ("POD_NAME",)).reason == "not_found"


def _process_root(tmp_path: Path, pid: int, cgroup: str, environ: bytes, start_ticks: int, uid: int = 1000) -> Path:
    d = tmp_path / "proc" / str(pid)
    d.mkdir(parents=True)
    (d / "status").write_text(f"Name:\tpython3\nState:\tS (sleeping)\nPid:\t{pid}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n")
    # proc(5): pid (comm) state ppid ... field 22 is starttime; a comm with spaces and ')' must not shift it
    fields = ["S", "1"] + ["0"] * 17 + [str(start_ticks)] + ["0"] * 10
    (d / "stat").write_text(f"{pid} (py thon3) x) " + " ".join(fields) + "\n")
    (d / "cgroup").write_text(cgroup)
    (d / "environ").write_bytes(environ)
    (tmp_path / "proc" / "uptime").write_text("7300.50 100000.00\n")
    (tmp_path / "etc").mkdir(exist_ok=True)
    (tmp_path / "etc" / "passwd").write_text(
        "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\n"
    )
    return tmp_path


def test_a_process_is_named_with_its_user_age_container_and_pod(tmp_path):
    cgroup = (CGROUPS / "k8s_systemd_v2_containerd_burstable").read_text()
    root = _process_root(
        tmp_path, 506, cgroup, b"KUBERNETES_SERVICE_HOST=10.96.0.1\0HOSTNAME=notebook-0\0", start_ticks=5050
    )
    ns = root / "proc" / "506" / "root" / "var" / "run" / "secrets" / "kubernetes.io" / "serviceaccount"
    ns.mkdir(parents=True)
    (ns / "namespace").write_text("research")
    o = owner(FakeHost(root), 506)
    assert (o.name, o.user, o.age_s) == ("python3", "alice", 7250.0)  # 7300.5 s up, started 50.5 s after boot
    assert o.container is not None
    assert (o.container.pod, o.container.namespace, o.container.runtime) == ("notebook-0", "research", "containerd")
    assert o.container.pod_uid == "7a3f2c1e-5b4d-4e6f-8a9b-0c1d2e3f4a5b"
    assert o.container.label == "research/notebook-0"
    gone = owner(FakeHost(root), 999)
    assert (gone.visible, gone.name) == (False, None)


# --- the recorded H200 with two processes: one computing, one holding 20 GiB idle --------------------------------
HOLDERS = Path(__file__).parent / "fixtures" / "gpu_holders"
RECORDED = HOLDERS / "snapshot_two_processes.json"


def _recorded_nvml() -> FakeNvml:
    return FakeNvml(json.loads(RECORDED.read_text())["raw"]["nvml"])


def _on_k8s_node(nvml: FakeNvml | None = None) -> Snapshot:
    """The recorded NVML readings, read on the Kubernetes node of `k8s_node/` (the same pids, older)."""
    host = FakeHost(HOLDERS / "k8s_node", files=host_files())
    return collect_snapshot(nvml or _recorded_nvml(), host, window_s=0.1, load_ms=0, use_framework=False)


def _processes(snap: Snapshot) -> dict[int, dict]:
    return {p["pid"]: p for p in snap.get("gpu.0.processes")}


def test_each_process_is_listed_with_its_vram_share_of_time_user_age_and_pod():
    procs = _processes(_on_k8s_node())
    trainer, notebook = procs[506], procs[507]
    assert (trainer["used_bytes"], trainer["sm_util_pct"], trainer["user"], trainer["age_s"]) == (
        1050673152,
        99.0,
        "root",
        10800.0,
    )
    assert trainer["container"]["pod"] == "llm-pretrain-0"
    assert (trainer["container"]["namespace"], trainer["container"]["name"]) == ("research", "trainer")
    assert trainer["container"]["runtime"] == "containerd" and trainer["container"]["qos"] == "burstable"
    # the idle holder: no NVML sample at all in the window is no kernel, 0%
    assert (notebook["used_bytes"], notebook["sm_util_pct"], notebook["user"], notebook["age_s"]) == (
        22114467840,
        0.0,
        "jovyan",
        9000.0,
    )
    assert (notebook["container"]["pod"], notebook["container"]["namespace"]) == ("jupyter-alice-0", "notebooks")


def test_the_environment_is_read_for_the_pod_but_never_kept_in_the_snapshot(tmp_path):
    snap = _on_k8s_node()
    path = tmp_path / "snap.json"
    snap.save(path)
    assert "not-a-real-key" not in path.read_text()  # 506's environment holds it; only the pod's variables are read
    again = Snapshot.load(path)  # the new fields survive a round trip through the typed facts
    assert _processes(again)[507]["container"]["pod"] == "jupyter-alice-0"
    assert _processes(again)[506]["sm_util_pct"] == 99.0


def test_the_idle_holder_is_named_with_its_pod_and_gpu_hours_and_the_computing_one_is_not():
    snap = _on_k8s_node()
    found = [f for f in evaluate(snap) if f.id == "gpu.idle_held"]
    assert len(found) == 1 and found[0].subject == "gpu.0"
    f = found[0]
    (holder,) = f.evidence["holders"]
    assert holder["pid"] == 507 and holder["container"] == "pod notebooks/jupyter-alice-0"
    total = snap.get("gpu.0.memory.total_bytes")
    # another process computes on the GPU: the holder keeps its share of the memory, for the 2.5 h it has lived
    assert holder["gpu_share"] == round(22114467840 / total, 3)
    assert f.evidence["gpu_hours"] == round(9000 / 3600 * holder["gpu_share"], 4)
    assert f.evidence["others_computing"] == [506]
    assert "pid 507 (python3, user jovyan, pod notebooks/jupyter-alice-0) holds 20.6 GiB" in f.symptom
    assert "last 10 s" in f.symptom


def test_alone_on_its_gpu_an_idle_holder_keeps_the_whole_gpu():
    nvml = _recorded_nvml().set(
        "nvmlDeviceGetProcessUtilization", 0, {"__unavailable__": Unavailable("not_found", "Not Found").to_json()}
    )
    (f,) = [f for f in evaluate(_on_k8s_node(nvml)) if f.id == "gpu.idle_held"]
    # the computing process's 1.05 GB is under the 1 GiB a holder needs: only 507 is named, for the whole GPU
    assert [h["pid"] for h in f.evidence["holders"]] == [507]
    assert f.evidence["holders"][0]["gpu_share"] == 1.0 and f.evidence["gpu_hours"] == 2.5


def test_no_idle_holder_where_the_snapshot_cannot_tell():
    # as recorded: the processes were 26 s old, not the minutes an idle holder needs
    recorded = Snapshot.load(RECORDED)
    assert {p["pid"]: p["sm_util_pct"] for p in recorded.get("gpu.0.processes")} == {506: 99.0, 507: 0.0}
    assert not [f for f in evaluate(recorded) if f.id == "gpu.idle_held"]
    # a GPU whose driver gives no per-process utilization: unknown, never taken for idle
    nvml = _recorded_nvml().set(
        "nvmlDeviceGetProcessUtilization",
        0,
        {"__unavailable__": Unavailable("not_supported", "Not Supported").to_json()},
    )
    snap = _on_k8s_node(nvml)
    assert _processes(snap)[507].get("sm_util_pct") is None
    assert not [f for f in evaluate(snap) if f.id == "gpu.idle_held"]


def test_check_says_the_cost_at_a_price_and_shows_the_processes(tmp_path):
    snap = _on_k8s_node()
    path = tmp_path / "snap.json"
    snap.save(path)
    result = CliRunner().invoke(app, ["check", "--from", str(path), "--price", "4", "--currency", "EUR", "--json"])
    report = json.loads(result.stdout)
    (f,) = [f for f in report["findings"] if f["id"] == "gpu.idle_held"]
    assert f["evidence"]["cost"] == round(f["evidence"]["gpu_hours"] * 4, 2) and f["evidence"]["currency"] == "EUR"
    assert f"{f['evidence']['cost']:g} EUR at 4 EUR/GPU-hour" in f["symptom"]
    text = CliRunner().invoke(app, ["check", "--from", str(path)], env={"COLUMNS": "160"}).stdout
    assert "processes" in text
    row = next(line for line in text.splitlines() if " 507 " in line)
    assert "jovyan" in row and "20.6G" in row and "notebooks/jupyter-alice-0" in row and "2.5h" in row
    assert "research/llm-pretrain-0/trainer" in text


# --- over the minutes of a watch: run.idle_held ----------------------------------------------------------------
SNAP_FACTS = {f["name"]: f.get("value") for f in json.loads(RECORDED.read_text())["facts"]}


def _recorded_gpu() -> GpuSample:
    """GPU 0 as the recorded snapshot read it while one process computed and the other held 20 GiB."""
    g = "gpu.0."
    return GpuSample(
        index=0,
        util_pct=SNAP_FACTS[g + "util.gpu_pct"],
        mem_util_pct=SNAP_FACTS[g + "util.memory_pct"],
        power_mw=SNAP_FACTS[g + "power.draw_mw"],
        sm_clock_mhz=SNAP_FACTS[g + "clock.sm_mhz"],
        used_bytes=SNAP_FACTS[g + "memory.used_bytes"],
        temperature_c=SNAP_FACTS[g + "temperature_c"],
        sm_active_pct=SNAP_FACTS[g + "gpm.sm_active_pct"],
        sm_occupancy_pct=SNAP_FACTS[g + "gpm.sm_occupancy_pct"],
        tensor_active_pct=SNAP_FACTS[g + "gpm.tensor_active_pct"],
        dram_active_pct=SNAP_FACTS[g + "gpm.dram_bw_util_pct"],
    )


def _watched(minutes: float, nvml_at=lambda t: _recorded_nvml(), kind: str = "watch", idle_held_min_s=None):
    """A watch of `minutes`, 1 sample a second; every 2 s the processes are read through `Holders` from the NVML
    answers `nvml_at(t)` gives (the recorded ones by default), named on the Kubernetes node of `k8s_node/`."""
    holders = Holders(_recorded_nvml(), FakeHost(HOLDERS / "k8s_node"), [0])
    t0, samples, procs = 1_796_206_700.0, [], []
    for k in range(int(minutes * 60)):
        if k % 2 == 0:
            holders.nvml = nvml_at(k)
            procs = holders.read()
        samples.append(Sample(t_s=t0 + k, gpus=[_recorded_gpu()], job_processes=procs))
    meta = RunMeta(
        gpus={"0": GpuStatic(name="NVIDIA H200", memory_total_bytes=SNAP_FACTS["gpu.0.memory.total_bytes"], gpm=True)},
        price_per_gpu_hour=3.5,
        currency="USD",
        idle_held_min_s=idle_held_min_s,
    )
    rec = replay(samples, meta, kind=kind)
    rec.owners = holders.owners
    return judge(rec, None)


def test_a_watch_names_the_process_that_held_20_gib_idle_with_its_gpu_hours_and_cost():
    report = _watched(12)
    (f,) = [f for f in report.findings if f.id == "run.idle_held"]
    (h,) = f.evidence["holders"]
    total = SNAP_FACTS["gpu.0.memory.total_bytes"]
    assert (h["pid"], h["user"], h["container"]["pod"], h["container"]["namespace"]) == (
        507,
        "jovyan",
        "jupyter-alice-0",
        "notebooks",
    )
    assert h["used_min_bytes"] == 22114467840 and h["idle_s"] == 12 * 60 - 1
    assert h["gpu_share"] == round(22114467840 / total, 3)  # pid 506 computed beside it all along
    assert f.evidence["gpu_hours"] == round((12 * 60 - 1) / 3600 * h["gpu_share"], 4)
    assert f.evidence["cost"] == round(f.evidence["gpu_hours"] * 3.5, 2)
    assert (
        "pid 507 (python3, user jovyan, pod notebooks/jupyter-alice-0) held 20.6 GiB with no kernel for 12 min"
        in f.symptom
    )
    # the processes of the report carry who they are
    assert {p.pid: (p.owner.container.pod if p.owner and p.owner.container else None) for p in report.processes} == {
        506: "llm-pretrain-0",
        507: "jupyter-alice-0",
    }
    assert {p.pid: p.computing_share for p in report.processes} == {506: 1.0, 507: 0.0}


def test_a_process_that_computes_between_idle_stretches_is_not_idle_held():
    def nvml_at(t: int) -> FakeNvml:
        nvml = _recorded_nvml()
        if 360 <= t < 370:  # 6 min in, the holder runs kernels for 10 s
            nvml.set(
                "nvmlDeviceGetProcessUtilization",
                0,
                [{"pid": 506, "timeStamp": t, "smUtil": 99}, {"pid": 507, "timeStamp": t, "smUtil": 35}],
            )
        return nvml

    report = _watched(12, nvml_at)
    assert not [f for f in report.findings if f.id == "run.idle_held"]
    longest = next(p for p in report.processes if p.pid == 507).idle_longest_s
    assert longest is not None and 5 * 60 < longest < 10 * 60


def test_under_ten_minutes_no_process_is_idle_held():
    assert not [f for f in _watched(9).findings if f.id == "run.idle_held"]


def test_the_minutes_a_user_sets_decide_and_are_said():
    """A platform that culls notebooks after 5 min names the holder of a 9-minute watch; one that allows 15 does
    not name it after 12. The minutes set are in the finding's evidence."""
    (f,) = [f for f in _watched(9, idle_held_min_s=300.0).findings if f.id == "run.idle_held"]
    assert f.evidence["idle_held_min_s"] == 300.0 and f.evidence["holders"][0]["pid"] == 507
    assert not [f for f in _watched(12, idle_held_min_s=900.0).findings if f.id == "run.idle_held"]
    (f,) = [f for f in _watched(12).findings if f.id == "run.idle_held"]
    assert "idle_held_min_s" not in f.evidence  # the threshold's 10 min: nothing more to say


def test_check_takes_the_minutes_from_the_option_else_the_config_file(tmp_path):
    """The holder on the Kubernetes node started 2.5 h ago: named at the default 10 min and with --idle-after 60,
    not with --idle-after 180 nor with `[idle_held] after_minutes = 180` in the config file; a wrong value in the
    file is one line and exit 3."""
    snap = _on_k8s_node()
    path = tmp_path / "snap.json"
    snap.save(path)
    config = tmp_path / "config.toml"
    env = {"GPUTRIAGE_CONFIG": str(config)}

    def held(*args: str) -> list[dict]:
        r = CliRunner().invoke(app, ["check", "--from", str(path), "--json", *args], env=env)
        assert r.exit_code == 0, r.output
        return [f for f in json.loads(r.stdout)["findings"] if f["id"] == "gpu.idle_held"]

    assert held() and "idle_held_min_s" not in held()[0]["evidence"]
    assert held("--idle-after", "60")[0]["evidence"]["idle_held_min_s"] == 3600.0
    assert held("--idle-after", "180") == []
    config.write_text("[idle_held]\nafter_minutes = 180\n")
    assert held() == [] and held("--idle-after", "60")  # the option over the file
    for wrong in ('"ten"', "nan", "inf", "0"):
        config.write_text(f"[idle_held]\nafter_minutes = {wrong}\n")
        r = CliRunner().invoke(app, ["check", "--from", str(path)], env=env)
        assert r.exit_code == 3 and "[idle_held] after_minutes must be a number > 0" in r.stderr, wrong
        assert r.stderr.count("\n") == 1


def test_the_exporter_judges_idle_holders_at_the_minutes_set():
    from gputriage.diagnosis.idle_held import judge_live
    from gputriage.model.exporter import HeldProcess

    held = [HeldProcess(gpu=0, pid=507, used_bytes=22114467840, sm_util_pct=0.0, idle_s=400.0)]
    assert [p.idle_held for p in judge_live(held, {})] == [False]
    assert [p.idle_held for p in judge_live(held, {}, min_s=300.0)] == [True]


def test_the_streaks_idle_level_is_the_declared_threshold():
    assert IDLE_HELD_SM.value == IDLE_PCT


def test_a_watch_samples_every_process_on_the_gpus_with_its_share_and_owner():
    class Recorded(StreamNvml):  # the GPU's counters from a recorded loop; the processes as the H200 answered
        def call(self, fn, index=None, *args):
            if fn in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetProcessUtilization"):
                return _recorded_nvml().call(fn, index)
            return super().call(fn, index, *args)

    got: list[Sample] = []
    sampler = Sampler(
        Recorded(SCENARIOS["healthy_bf16"]["samples"]),
        FakeHost(HOLDERS / "k8s_node"),
        [0],
        cadences=Cadences(gpu_s=0.01),
        sinks=(got.append,),
    )
    sampler.holders = Holders(sampler.nvml, FakeHost(HOLDERS / "k8s_node"), [0])
    sampler.start()
    deadline = time.monotonic() + 10
    while not (got and got[-1].job_processes) and time.monotonic() < deadline:
        time.sleep(0.01)
    sampler.stop()
    assert {(p.pid, p.used_bytes, p.sm_util_pct) for p in got[-1].job_processes} == {
        (506, 1050673152, 99.0),
        (507, 22114467840, 0.0),
    }
    assert not got[-1].neighbours
    assert sampler.holders.owners[507].container.pod == "jupyter-alice-0"


def test_the_watch_view_lists_the_processes_with_their_pods():
    holders = Holders(_recorded_nvml(), FakeHost(HOLDERS / "k8s_node"), [0])
    sample = Sample(t_s=1_796_206_700.0, gpus=[_recorded_gpu()], job_processes=holders.read())
    console = Console(width=140, record=True)
    console.print(
        frame(sample, {"0": GpuStatic(memory_total_bytes=SNAP_FACTS["gpu.0.memory.total_bytes"])}, {}, holders.owners)
    )
    text = console.export_text()
    row = next(line for line in text.splitlines() if " 507 " in line)
    assert "jovyan" in row and "20.6G" in row and " 0%" in row and "notebooks/jupyter-alice-0" in row
    assert "research/llm-pretrain-0/trainer" in next(line for line in text.splitlines() if " 506 " in line)


# --- the exporter: per-process series labelled as dcgm-exporter labels pods ------------------------------------
def test_the_exporter_serves_each_process_with_its_pod_labels_share_and_idle_time():
    pytest.importorskip("prometheus_client")
    from gputriage.api.exporter import exporter
    from gputriage.report.prometheus import families

    ex = exporter(
        nvml=_recorded_nvml(), host=FakeHost(HOLDERS / "k8s_node"), price_per_gpu_hour=3.5, check_every_s=0
    ).open()
    t0 = 1_796_206_700.0
    for k in range(12 * 60):  # 12 minutes of 1 s samples, judged as the judge thread does every second
        ex.sampler.recent.append(Sample(t_s=t0 + k, gpus=[_recorded_gpu()]))
        ex.judge_once()
    series = {
        (s.name, s.labels["pid"]): s
        for f in families(ex.state())
        if f.name.startswith("gputriage_gpu_process")
        for s in f.samples
    }
    idle = series[("gputriage_gpu_process_idle_held", "507")]
    assert {k: idle.labels[k] for k in ("gpu", "pod", "namespace", "container", "process", "user")} == {
        "gpu": "0",
        "pod": "jupyter-alice-0",
        "namespace": "notebooks",
        "container": "",
        "process": "python3",
        "user": "jovyan",
    }
    assert idle.value == 1.0 and series[("gputriage_gpu_process_idle_held", "506")].value == 0.0
    assert series[("gputriage_gpu_process_memory_bytes", "507")].value == 22114467840
    assert series[("gputriage_gpu_process_sm_util_ratio", "506")].value == 0.99
    assert series[("gputriage_gpu_process_sm_util_ratio", "506")].labels["container"] == "trainer"
    # read every 5 s of the samples' time: the stretch so far is what the last read saw
    held_s = series[("gputriage_gpu_process_idle_seconds", "507")].value
    assert 12 * 60 - 10 <= held_s <= 12 * 60 and series[("gputriage_gpu_process_idle_seconds", "506")].value == 0
    share = round(22114467840 / SNAP_FACTS["gpu.0.memory.total_bytes"], 3)
    assert series[("gputriage_gpu_process_idle_held_gpu_hours", "507")].value == round(held_s / 3600 * share, 4)
    price = next(s for f in families(ex.state()) if f.name == "gputriage_price_per_gpu_hour" for s in f.samples)
    assert price.value == 3.5 and price.labels["currency"] == "USD"


def test_a_fleet_nodes_result_carries_who_holds_its_gpus(tmp_path, monkeypatch):
    from gputriage.api.fleet import REPLAY_ENV, on_node
    from gputriage.model.fleet import NodeResult

    path = tmp_path / "node.json"
    _on_k8s_node().save(path)
    monkeypatch.setenv(REPLAY_ENV, str(path))
    node = msgspec.json.decode(on_node(bench=False), type=NodeResult)
    by_pid = {p.pid: p for p in node.processes}
    assert (by_pid[507].used_bytes, by_pid[507].sm_util_pct, by_pid[507].owner.user) == (22114467840, 0.0, "jovyan")
    assert by_pid[507].owner.container.pod == "jupyter-alice-0" and by_pid[506].sm_util_pct == 99.0
    assert "gpu.idle_held" in {f.id for f in node.findings}
    # the head's minutes reach the node: the holder started 2.5 h ago, not the 3 h asked
    node = msgspec.json.decode(on_node(False, 3 * 3600.0), type=NodeResult)
    assert "gpu.idle_held" not in {f.id for f in node.findings} and node.processes
