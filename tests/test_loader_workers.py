"""A DataLoader's worker processes: counted by the name torch gives them (`sampling.loader_workers`), their CPU, the
cores the workload may use (`backends.cpu_allowance`), the run's summary (`RunReport.loader`), and the rules
`run.loader_workers_oversubscribed` and `run.loader_workers_too_few`.

A real DataLoader on CPU (its process held to one core) checks the counts and the finding, not timings; the recorded
H200 run `workers_augment` (4 workers augmenting images) checks the starved GPU's rule."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import msgspec
import pytest

from gputriage.backends.cpu_allowance import cgroup_quota_cores, usable_cores
from gputriage.backends.host import Host
from gputriage.backends.process_tree import ProcessDetail
from gputriage.diagnosis.run.judge import judge
from gputriage.model.run import RunMeta, RunReport
from gputriage.model.sample import Sample, WorkloadSample
from gputriage.report.html import render_html
from gputriage.report.loader_workers import terminal_line
from gputriage.sampling.loader_workers import WORKER_NAME, loader_fields
from gputriage.sampling.session import replay
from recordings import judged, runs

T0 = 1_000.0


def detail(cpu_s: float, name: str = WORKER_NAME) -> ProcessDetail:
    return ProcessDetail({}, cpu_s, 0, 0, 0, 0, True, name)


# ---- counting them ------------------------------------------------------------------------------------------------


def test_workers_are_the_processes_torch_names_and_their_cpu_is_theirs_alone():
    prev = {1: detail(10.0, "python"), 2: detail(1.0), 3: detail(2.0), 4: detail(0.0, "python")}
    seen = {1: detail(11.0, "python"), 2: detail(1.9), 3: detail(2.7), 4: detail(0.5, "python"), 5: detail(0.1)}
    got = loader_fields(prev, seen, 1.0)
    assert got["loader_workers"] == 3  # 2, 3 and 5 (just started: counted, its CPU not yet read)
    assert got["loader_cpu_pct"] == pytest.approx(160.0) and got["loader_worker_cpu_pct"] == pytest.approx(80.0)
    assert loader_fields(prev, {1: detail(11.0, "python")}, 1.0) == {}  # no worker: nothing said


def test_the_cores_are_the_affinity_capped_by_the_cgroup_quota(tmp_path: Path):
    root = tmp_path
    (root / "proc/7").mkdir(parents=True)
    (root / "proc/7/cgroup").write_text("0::/kubepods.slice/pod.slice/job.scope\n")
    cg = root / "sys/fs/cgroup/kubepods.slice/pod.slice/job.scope"
    cg.mkdir(parents=True)
    (cg / "cpu.max").write_text("max 100000\n")
    (cg.parent / "cpu.max").write_text("150000 100000\n")  # the pod's limit: 1.5 cores
    host = Host(root)
    assert cgroup_quota_cores(host, 7) == 1.5
    assert usable_cores(host, [7]) == 1.5  # a fixture root: no affinity read
    (root / "proc/8").mkdir()
    (root / "proc/8/cgroup").write_text("4:cpu,cpuacct:/docker/abc\n3:memory:/docker/abc\n")
    v1 = root / "sys/fs/cgroup/cpu,cpuacct"  # a container sees its own cgroup at the hierarchy's root
    v1.mkdir(parents=True)
    (v1 / "cpu.cfs_quota_us").write_text("200000\n")
    (v1 / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_quota_cores(host, 8) == 2.0
    (v1 / "cpu.cfs_quota_us").write_text("-1\n")
    assert cgroup_quota_cores(host, 8) is None  # no quota
    live = Host("/")
    me = os.getpid()
    assert usable_cores(live, [me], read_affinity=lambda pids: {0, 1, 2}) == min(
        3.0, cgroup_quota_cores(live, me) or 3.0
    )


# ---- the run's summary and the rules, on windows -------------------------------------------------------------------


def loader_run(workers: int, cores: float, workload_pct: float, seconds: int = 20) -> RunReport:
    """A CPU run whose DataLoader runs `workers` workers sharing `cores`, the workload at `workload_pct`."""
    xs = [
        Sample(
            t_s=T0 + k / 4,
            workload=WorkloadSample(
                cpu_pct=workload_pct,
                loader_workers=workers,
                loader_cpu_pct=workload_pct - 10.0,
                loader_worker_cpu_pct=(workload_pct - 10.0) / workers,
                cores_usable=cores,
            ),
        )
        for k in range(4 * seconds)
    ]
    return judge(replay(xs, RunMeta(), command=["python", "train.py"]), 0)


def oversubscribed(r: RunReport) -> list[dict[str, object]]:
    return [
        f.evidence | {"severity": f.severity.value} for f in r.findings if f.id == "run.loader_workers_oversubscribed"
    ]


def test_four_workers_on_two_busy_cores_are_too_many_with_the_numbers():
    r = loader_run(workers=4, cores=2.0, workload_pct=180.0)
    assert r.loader is not None and (r.loader.workers, r.loader.cores, r.loader.workload_cpu_pct) == (4, 2.0, 180.0)
    (f,) = [f for f in r.findings if f.id == "run.loader_workers_oversubscribed"]
    assert f.severity.value == "warn" and f.evidence["cores_busy_share"] == 0.9
    assert "4 DataLoader workers share 2 usable core(s)" in f.symptom and "180% of a core" in f.symptom
    assert "num_workers=1" in f.decision
    assert terminal_line(r) is not None and "4 workers at 170% of a core together" in str(terminal_line(r))
    assert (
        "DataLoader workers" in render_html(r) and msgspec.json.decode(msgspec.json.encode(r))["loader"]["workers"] == 4
    )


def test_workers_within_the_cores_or_idle_ones_are_no_warning():
    assert oversubscribed(loader_run(workers=2, cores=4.0, workload_pct=380.0)) == []
    (idle,) = oversubscribed(loader_run(workers=4, cores=2.0, workload_pct=40.0))
    assert idle["severity"] == "info"  # they wait: harmless until they have work
    assert loader_run(workers=4, cores=2.0, workload_pct=180.0, seconds=0).loader is None


# ---- a starved GPU: the recorded workers_augment run --------------------------------------------------------------


def with_workers(run: dict[str, object], workers: int, cores: float) -> dict[str, object]:
    """The recording as the sampler now reads it: its processes beside the one on the GPU are the script's DataLoader
    workers (`examples/workloads/workers_augment.py`: 4), their CPU the workload's less the GPU process's; the recording
    predates the count."""
    out = json.loads(json.dumps(run))
    for s in out["samples"]:
        w = s.get("workload") or {}
        if (w.get("pids") or 0) > 1 and w.get("cpu_pct") is not None and w.get("gpu_process_cpu_pct") is not None:
            loader = w["cpu_pct"] - w["gpu_process_cpu_pct"]
            w |= {"loader_workers": workers, "loader_cpu_pct": loader, "loader_worker_cpu_pct": loader / workers}
            w["cores_usable"] = cores
    return out


@pytest.mark.parametrize("name", ["workers_augment_gpm", "workers_augment_nogpm"])
def test_a_gpu_starved_by_four_busy_workers_with_cores_free_asks_for_more_workers(name: str):
    run = runs("runs_helpers.json.gz")[name]
    assert [f for f in judged(run).findings if f.id.startswith("run.loader")] == []  # no count: no finding
    r = judged(with_workers(run, 4, 16.0))  # the H200 host's 16 cores (its samples' per-core CPU)
    assert r.verdict.per_gpu["0"].bottleneck is not None and r.verdict.per_gpu["0"].bottleneck.value == "input_starved"
    (f,) = [f for f in r.findings if f.id == "run.loader_workers_too_few"]
    assert f.subject == "gpu.0" and f.evidence["workers"] == 4 and 70 <= f.evidence["worker_cpu_pct"] <= 100
    assert "Raise num_workers to 8" in f.decision and "16 cores usable" in f.symptom
    (few,) = [f for f in judged(with_workers(run, 4, 5.0)).findings if f.id == "run.loader_workers_too_few"]
    assert "every core the job may use" in few.cause  # 4 workers and the main process on 5 cores: none free


def test_a_gpu_that_computes_asks_for_no_more_workers():
    run = with_workers(runs("runs_auto.json.gz")["healthy"], 4, 16.0)
    assert [f for f in judged(run).findings if f.id == "run.loader_workers_too_few"] == []


# ---- a real DataLoader on CPU ---------------------------------------------------------------------------------------

LOADER = """
import os, time
import torch
import gputriage
from torch.utils.data import DataLoader, Dataset

os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core: its workers inherit it


class Sums(Dataset):
    def __len__(self):
        return 10**6

    def __getitem__(self, i):
        return torch.tensor([float(sum(k * k for k in range(3000)))])


t = time.monotonic()
for batch in DataLoader(Sums(), batch_size=4, num_workers=4):
    gputriage.step(samples=len(batch))
    if time.monotonic() - t > 8:
        break
"""


def test_a_real_dataloader_with_four_workers_on_one_core_is_counted_and_named(tmp_path: Path):
    script = tmp_path / "loader.py"
    script.write_text(textwrap.dedent(LOADER))
    r = subprocess.run(
        [sys.executable, "-m", "gputriage", "run", "--no-store", "--json", "--", sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(r.stdout)
    loader = report["loader"]
    assert loader["workers"] == 4 and 0 < loader["cores"] <= 1
    (f,) = [f for f in report["findings"] if f["id"] == "run.loader_workers_oversubscribed"]
    assert f["evidence"]["workers"] == 4 and f["evidence"]["cores"] == loader["cores"]


class FakeTree:
    """The workload's processes as successive reads find them; counts its re-scans."""

    def __init__(self, reads: list[dict[int, ProcessDetail]]) -> None:
        self.reads, self.rescans = reads, 0
        self.root = type("Root", (), {"pid": 1})()

    def refresh(self) -> bool:
        self.rescans += 1
        return True

    @property
    def pids(self) -> set[int]:
        return set(self.reads[0])

    def details(self) -> dict[int, ProcessDetail]:
        return self.reads.pop(0)


def test_a_worker_that_ends_has_the_tree_scanned_again_at_the_next_read():
    """A new epoch's workers replace the last's: the sampler looks for them at once, not at its next 5 s re-scan."""
    from gputriage.backends.nvml_replay import ReplayNvml
    from gputriage.sampling.sampler import ProcessTreeReader

    main = detail(1.0, "python")
    two = {1: main, 2: detail(1.0), 3: detail(1.0)}
    reader = ProcessTreeReader(os.getpid(), ReplayNvml({}), [], every=1, refresh_every=100, cores=lambda pids: 2.0)
    tree = FakeTree([two, two, {1: main, 2: detail(1.5)}, {1: main, 2: detail(2.0)}])
    reader.tree = tree  # type: ignore[assignment]
    first = reader.read()
    assert first is not None and first.loader_workers == 2 and first.cores_usable == 2.0 and tree.rescans == 1
    reader.read()
    assert tree.rescans == 1
    fewer = reader.read()
    assert fewer is not None and fewer.loader_workers == 1 and tree.rescans == 1
    reader.read()
    assert tree.rescans == 2  # a worker ended: scanned again
