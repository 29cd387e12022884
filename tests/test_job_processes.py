"""Processes of the workload itself that share a GPU: each one's share from NVML's per-process
utilization, the verdict contended when two compute, a finding naming them."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import psutil
import pytest

from gputriage.backends.nvml_queries import process_sm_util
from gputriage.backends.process_tree import ProcessDetail
from gputriage.diagnosis.run.judge import judge
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.reading import Unavailable
from gputriage.model.run import RunMeta
from gputriage.model.sample import GpuProcess, Sample
from gputriage.sampling import sampler as sampler_module
from gputriage.sampling.sampler import Cadences, ProcessTreeReader, Sampler
from gputriage.sampling.session import replay
from gputriage.testing.fake_nvml import FakeNvml
from gputriage.testing.stream_nvml import StreamNvml

FIXTURES = Path(__file__).parent / "fixtures" / "h200"
SCENARIOS = json.loads((FIXTURES / "scenario_samples.json").read_text())
TYPED = json.loads(gzip.decompress((FIXTURES / "runs_typed.json.gz").read_bytes()))


def test_per_process_utilization_is_each_pids_mean_since_the_last_reading():
    nvml = FakeNvml({}).set(
        "nvmlDeviceGetProcessUtilization",
        0,
        [
            {"pid": 11, "timeStamp": 1_000, "smUtil": 40, "memUtil": 10},
            {"pid": 11, "timeStamp": 2_000, "smUtil": 60, "memUtil": 12},
            {"pid": 12, "timeStamp": 1_500, "smUtil": 0, "memUtil": 0},
        ],
    )
    assert process_sm_util(nvml, 0, 0) == ({11: 50.0, 12: 0.0}, 2_000)
    # no sample since: no process ran a kernel; a GPU that does not say: unknown, not zero
    assert process_sm_util(FakeNvml({}), 0, 7) == ({}, 7)
    unsupported = FakeNvml({}).set(
        "nvmlDeviceGetProcessUtilization", 0, {"__unavailable__": Unavailable("not_supported", "").to_json()}
    )
    assert process_sm_util(unsupported, 0, 7) is None


def test_the_workloads_own_processes_on_a_gpu_are_job_processes_with_their_share(make_host):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:

        class Shared(StreamNvml):
            def call(self, fn, index=None, *args):
                if fn == "nvmlDeviceGetComputeRunningProcesses":
                    return [
                        {"pid": os.getpid(), "usedGpuMemory": 3 << 30},
                        {"pid": child.pid, "usedGpuMemory": 1 << 30},
                        {"pid": 4242, "usedGpuMemory": 2 << 30},
                    ]
                if fn == "nvmlDeviceGetProcessUtilization":
                    return [
                        {"pid": os.getpid(), "timeStamp": 1, "smUtil": 48},
                        {"pid": child.pid, "timeStamp": 1, "smUtil": 47},
                    ]
                return super().call(fn, index, *args)

        got: list[Sample] = []
        sampler = Sampler(
            Shared(SCENARIOS["healthy_bf16"]["samples"]),
            make_host(),
            [0],
            cadences=Cadences(gpu_s=0.01),
            pid=os.getpid(),
            sinks=(got.append,),
        )
        sampler.start()
        deadline = time.monotonic() + 10
        while not (got and got[-1].job_processes) and time.monotonic() < deadline:
            time.sleep(0.01)
        sampler.stop()
    finally:
        child.kill()
    s = got[-1]
    assert {(p.pid, p.sm_util_pct) for p in s.job_processes} == {(os.getpid(), 48.0), (child.pid, 47.0)}
    assert [(n.pid, n.sm_util_pct) for n in s.neighbours] == [(4242, 0.0)]  # listed, ran no kernel


def _healthy_with(second: GpuProcess) -> list[Sample]:
    """The healthy bf16 loop recorded on the H200, a second process of the job beside it from its first kernel."""
    rec = TYPED["healthy"]
    samples = [msgspec.convert(s, Sample) for s in rec["samples"]]
    for s in samples:
        g = s.gpu(0)
        if g is not None and (g.util_pct or 0) > 50:
            s.job_processes = [GpuProcess(gpu=0, pid=100, used_bytes=2 << 30, sm_util_pct=g.util_pct / 2), second]
    return samples


def _judged(samples: list[Sample]):
    return judge(replay(samples, msgspec.convert(TYPED["healthy"]["meta"], RunMeta), command=["train.py"]), 0)


def test_two_processes_of_the_job_computing_on_one_gpu_are_contended_and_named():
    report = _judged(_healthy_with(GpuProcess(gpu=0, pid=101, used_bytes=2 << 30, sm_util_pct=47.0)))
    assert report.verdict.bottleneck == B.contended
    assert "2 processes of this job run kernels on the GPU at once" in report.verdict.per_gpu["0"].summary
    f = next(f for f in report.findings if f.id == "run.job_shares_gpu")
    assert f.evidence["pids"] == [100, 101] and "pid 101 47%" in f.symptom
    assert {(p.pid, p.job) for p in report.processes} == {(100, True), (101, True)}


def test_a_helper_process_holding_a_context_is_not_contention_but_is_said():
    report = _judged(_healthy_with(GpuProcess(gpu=0, pid=101, used_bytes=1 << 29, sm_util_pct=0.0)))
    assert report.verdict.bottleneck == B.compute_bound
    ids = {f.id for f in report.findings}
    assert "run.job_shares_gpu" not in ids and "run.idle_cuda_context" in ids


def test_the_report_lists_each_process_on_the_shared_gpu():
    from rich.console import Console

    from gputriage.report import run_terminal

    report = _judged(_healthy_with(GpuProcess(gpu=0, pid=101, used_bytes=2 << 30, sm_util_pct=47.0)))
    console = Console(width=200, record=True)
    run_terminal.render(report, console)
    text = console.export_text()
    assert "GPU 0 processes: pid 100 (this job, kernels" in text
    assert "pid 101 (this job, kernels 47% of the time" in text


class _OnGpu(StreamNvml):
    """A GPU on which this process holds the context (its children do not)."""

    def call(self, fn, index=None, *args):
        if fn == "nvmlDeviceGetComputeRunningProcesses":
            return [{"pid": os.getpid(), "usedGpuMemory": 1 << 30}]
        return super().call(fn, index, *args)


def test_the_sampler_reads_the_cpu_of_the_processes_on_the_gpu_apart_from_their_helpers(monkeypatch):
    # two readings of the tree 2 s apart (a clock of the test's own): the process on the GPU used 0.04 s of CPU,
    # its main thread 0.03 s; a DataLoader-like helper 1.9 s on one thread
    me, helper = os.getpid(), 4243
    readings = iter(
        [
            {
                me: ProcessDetail({me: 10.0, me + 1: 1.0}, 11.0, 1 << 30, 0, 0, 0),
                helper: ProcessDetail({helper: 5.0}, 5.0, 1 << 28, 0, 0, 0),
            },
            {
                me: ProcessDetail({me: 10.03, me + 1: 1.01}, 11.04, 1 << 30, 0, 0, 0),
                helper: ProcessDetail({helper: 6.9}, 6.9, 1 << 28, 0, 0, 0),
            },
        ]
    )
    now = iter([100.0, 100.0, 102.0])
    monkeypatch.setattr(sampler_module, "time", type("Clock", (), {"monotonic": staticmethod(lambda: next(now))}))
    reader = ProcessTreeReader(me, _OnGpu(SCENARIOS["healthy_bf16"]["samples"]), [0], every=1, refresh_every=1000)
    monkeypatch.setattr(reader.tree, "refresh", lambda: True)
    monkeypatch.setattr(reader.tree, "details", lambda: next(readings))
    assert reader.read().cpu_pct is None  # one reading is no rate
    w = reader.read()
    assert w.cpu_pct == pytest.approx(97.0) and w.top_thread_pct == pytest.approx(95.0)
    assert w.gpu_process_cpu_pct == pytest.approx(2.0) and w.gpu_main_thread_pct == pytest.approx(1.5)


def test_a_busy_helper_of_a_real_process_on_the_gpu_is_counted_apart_from_it():
    # a child spinning beside this process (which holds the "GPU"): read until the child has used 0.3 s of CPU,
    # however long a loaded machine takes to give it that; this process only waits meanwhile
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        reader = ProcessTreeReader(os.getpid(), _OnGpu(SCENARIOS["healthy_bf16"]["samples"]), [0], every=1)
        reader.read()
        spun = psutil.Process(child.pid)
        start = sum(spun.cpu_times()[:2])
        deadline = time.monotonic() + 60
        while sum(spun.cpu_times()[:2]) - start < 0.3 and time.monotonic() < deadline:
            time.sleep(0.02)
        w = reader.read()
    finally:
        child.kill()
        child.wait()
    assert w.gpu_process_cpu_pct is not None and w.cpu_pct is not None
    assert w.cpu_pct - w.gpu_process_cpu_pct > 2 * w.gpu_process_cpu_pct  # the helper, not the process on the GPU
