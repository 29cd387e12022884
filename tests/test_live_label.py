"""`watch` and the exporter name each GPU's last second with one function (`diagnosis.run.live`) over one
reading of it (`sampling.live.LastSecond`): the same recorded samples, given to `watch`'s path
(`Monitor.live`) and to the exporter's (`Exporter.judge_once`, wired by the API), get the same label every
second, including where the CPU of the process on the GPU decides it."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gputriage.api.exporter import exporter
from gputriage.api.monitor import Monitor
from gputriage.diagnosis.run.classify import label
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.sample import Sample
from gputriage.sampling.windows import metrics_of
from gputriage.testing.recorded import from_flat_rows
from gputriage.testing.recordings import H200_STATIC
from gputriage.testing.stream_nvml import StreamNvml

MONITOR_MODULE = importlib.import_module("gputriage.api.monitor")  # its PynvmlBackend, as watch opens it

pytest.importorskip("prometheus_client")

SCENARIOS = json.loads((Path(__file__).parent / "fixtures" / "h200" / "scenario_samples.json").read_text())
PER_SECOND = 10  # the streams were recorded at 10 Hz


class HoldingNvml(StreamNvml):
    """A recorded H200 stream whose GPU 0 holds the processes given (as NVML lists compute processes)."""

    def __init__(self, rows: list[dict], pids: list[int]) -> None:
        super().__init__(rows)
        self.pids = pids

    def call(self, fn, index=None, *args):
        if fn == "nvmlDeviceGetComputeRunningProcesses":
            return [{"pid": p, "usedGpuMemory": 2**30} for p in self.pids]
        return super().call(fn, index, *args)


@pytest.fixture
def asleep():
    """A process on the GPU that spends no CPU (its figures do not move between two reads)."""
    p = subprocess.Popen(
        [sys.executable, "-c", "import time; print('asleep', flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None and p.stdout.readline().strip() == "asleep"  # its start-up's CPU is spent
    yield p.pid
    p.kill()
    p.wait()


def _seconds(samples: list[Sample]) -> list[list[Sample]]:
    """What the sampler's ring holds at the end of each recorded second."""
    return [samples[:k] for k in range(PER_SECOND, len(samples) + 1, PER_SECOND)]


def _watch_labels(monkeypatch, nvml: StreamNvml, samples: list[Sample]) -> list[str]:
    monkeypatch.setattr(MONITOR_MODULE, "PynvmlBackend", lambda **_kw: nvml)
    m = Monitor(store=False, kind="watch", pid=None, isolated=False)  # what `gputriage watch` opens
    m.__enter__()
    try:
        assert m.session is not None
        m.session.sampler.stop()  # the recorded samples, not the sampler's own, from here
        ring = m.session.sampler.recent
        out = []
        for upto in _seconds(samples):
            ring.clear()
            ring.extend(upto)
            now = m.live()
            assert now is not None
            out.append(now[1][0])
        return out
    finally:
        m.__exit__(None, None, None)


def _exporter_labels(nvml: StreamNvml, samples: list[Sample], make_host) -> list[str]:
    ex = exporter(port=0, period_s=0.1, window_s=60, check_every_s=0, nvml=nvml, host=make_host()).open()
    assert ex.sampler is not None
    out = []
    for upto in _seconds(samples):
        ex.sampler.recent.clear()
        ex.sampler.recent.extend(upto)
        out.append(ex.judge_once()[0])
    shares = ex.shares(samples[-1].t_s)[0]
    assert sum(shares.values()) == pytest.approx(1.0, abs=0.01)  # what gputriage_bottleneck_share publishes
    return out


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_watch_and_the_exporter_name_every_recorded_second_alike(scenario, asleep, monkeypatch, make_host):
    rows = SCENARIOS[scenario]["samples"]
    samples = from_flat_rows(rows)
    seen = _watch_labels(monkeypatch, HoldingNvml(rows, [asleep]), samples)
    served = _exporter_labels(HoldingNvml(rows, [asleep]), samples, make_host)
    assert len(seen) == len(samples) // PER_SECOND >= 15
    assert seen == served


def test_the_cpu_of_the_process_on_the_gpu_decides_alike_on_both_paths(asleep, monkeypatch, make_host):
    """A GPU at 1-5% GPU-Util whose process sleeps: idle once its CPU is read (the sleeping process gives the
    GPU nothing to wait on). The copy `watch` had read no process CPU and named these seconds otherwise,
    while the exporter said idle: the same second, two names."""
    rows = SCENARIOS["input_starved"]["samples"]
    samples = from_flat_rows(rows)
    seen = _watch_labels(monkeypatch, HoldingNvml(rows, [asleep]), samples)
    served = _exporter_labels(HoldingNvml(rows, [asleep]), samples, make_host)
    assert seen == served
    without_cpu = [
        label(metrics_of([s for s in upto if s.t_s >= upto[-1].t_s - 1.0], 0), H200_STATIC)[0].value
        for upto in _seconds(samples)
    ]
    parted = [(a, b) for a, b in zip(seen, without_cpu) if a != b]  # where the two copies named it differently
    assert len(parted) >= 5 and all(b == B.input_starved.value for _, b in parted)
    assert {a for a, _ in parted} <= {B.idle.value, B.sync_bound.value}
    assert sum(a == B.idle.value for a, _ in parted) >= 5


def test_a_gpu_with_no_process_is_named_from_its_samples_alone(monkeypatch, make_host):
    rows = SCENARIOS["healthy_bf16"]["samples"]
    samples = from_flat_rows(rows)
    seen = _watch_labels(monkeypatch, HoldingNvml(rows, []), samples)
    served = _exporter_labels(HoldingNvml(rows, []), samples, make_host)
    assert seen == served
    assert B.compute_bound.value in seen  # the steady GEMMs
    expected = [
        label(metrics_of([s for s in upto if s.t_s >= upto[-1].t_s - 1.0], 0), H200_STATIC)[0].value
        for upto in _seconds(samples)
    ]
    assert seen == expected  # no process to read: the run's window rules over the samples, unchanged
