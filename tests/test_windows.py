"""The windows a run is cut into, past their capacity: merged on a coarser grid, each window as long as the length
the series claims, the series bounded, and a verdict over a long run the same as over its uncompacted windows."""

from __future__ import annotations

import pytest

from gputriage.diagnosis.run.judge import judge
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.recording import Recording
from gputriage.model.run import RunMeta, RunReport
from gputriage.model.sample import GpuSample, HostSample, Sample, WorkloadSample
from gputriage.sampling.window_store import Store
from gputriage.sampling.windows import CAPACITY, Windower
from gputriage.testing.recordings import H200_STATIC

T0 = 1_800_000_000.0  # unix seconds, as the sampler stamps them
SMALL = 16


def _sample(t: float, phase: str = "compute") -> Sample:
    if phase == "compute":  # bf16 GEMMs back to back
        gpu = GpuSample(
            index=0,
            util_pct=100.0,
            sm_active_pct=96.0,
            sm_occupancy_pct=40.0,
            tensor_active_pct=70.0,
            dram_active_pct=30.0,
            power_mw=650_000,
            used_bytes=40 << 30,
        )
        reads = 0.0
    else:  # the GPU waiting on a training thread that reads and decodes its batches
        gpu = GpuSample(
            index=0,
            util_pct=35.0,
            sm_active_pct=30.0,
            sm_occupancy_pct=15.0,
            tensor_active_pct=20.0,
            dram_active_pct=10.0,
            power_mw=250_000,
            used_bytes=40 << 30,
        )
        reads = 300e6
    work = WorkloadSample(
        pids=1,
        cpu_pct=100.0,
        gpu_process_cpu_pct=100.0,
        top_thread_pct=100.0,
        gpu_main_thread_pct=100.0,
        rchar_bytes_per_s=reads,
    )
    return Sample(t_s=t, gpus=[gpu], workload=work, host=HostSample(cpu_busy_pct=[100.0, 5.0], iowait_pct=0.0))


def _fed(capacity: int, times: list[float], phase_of=lambda t: "compute") -> Windower:
    w = Windower([0], capacity=capacity)
    for t in times:
        w.add(_sample(t, phase_of(t)))
        assert len(w.series[0]) <= capacity + 1  # bounded all along, not only at the end
    w.close()
    return w


def test_a_long_run_at_a_small_capacity_keeps_few_windows_each_as_long_as_the_series_claims():
    w = _fed(SMALL, [T0 + 0.25 * i for i in range(4 * 4000)])  # 4,000 s at 4 Hz
    ws = list(w.series[0])
    assert len(ws) <= SMALL and w.window_s == w.series[0].window_s == w.store.window_s
    assert w.window_s in {2.0**k for k in range(12)}  # 1 s doubled at each compaction
    assert 4000 / SMALL <= w.window_s <= 4000 / (SMALL // 2 - 1)  # as long as the run needs, no longer
    for a, b in zip(ws, ws[1:]):
        assert a.t1_s - a.t0_s == pytest.approx(w.window_s, abs=1e-6)  # what the series claims, each window
        assert b.t0_s == pytest.approx(a.t1_s, abs=1e-6)  # they tile the run
    assert 0 < ws[-1].t1_s - ws[-1].t0_s <= w.window_s  # the last one partial
    assert ws[0].t0_s == T0 and ws[-1].t1_s == T0 + 0.25 * (4 * 4000 - 1)
    assert sum(x.samples for x in ws) == w.count == 4 * 4000
    assert all(x.util_pct == 100.0 and x.sm_active_pct == 96.0 for x in ws)


def test_windows_after_gaps_in_the_samples_never_last_longer_than_they_claim():
    # 3 s of samples every 11 s (a sampler starved of CPU, a laptop asleep), for 5,000 s
    times = [T0 + 11 * k + 0.5 * i for k in range(455) for i in range(6)]
    w = _fed(SMALL, times)
    ws = list(w.series[0])
    assert len(ws) <= SMALL and w.window_s <= 5000 / (SMALL // 2 - 1)
    for a, b in zip(ws, ws[1:]):
        assert a.t1_s - a.t0_s <= w.window_s + 1e-6 and a.t1_s <= b.t0_s + 1e-6
    assert sum(x.samples for x in ws) == len(times)


def test_a_store_compacts_on_the_coarser_grid_and_merges_what_each_field_means():
    s = Store([0], 1.0, 4)
    for i, (util, peak, free) in enumerate([(10, 20, 8), (30, 90, 4), (50, 60, 6), (70, 80, 2), (90, 95, 1)]):
        s.append(
            T0 + i, T0 + i + 1, 10, {"mem_available_min_bytes": free}, {0: {"util_pct": util, "util_max_pct": peak}}
        )
    assert s.window_s == 1.0 and len(s.t0) == 5  # the fifth window ends mid-slot of a 2 s grid: not yet
    s.append(T0 + 5, T0 + 6, 10, {"mem_available_min_bytes": 3}, {0: {"util_pct": 100, "util_max_pct": 100}})
    assert s.window_s == 2.0 and list(s.t0) == [T0, T0 + 2, T0 + 4] and list(s.t1) == [T0 + 2, T0 + 4, T0 + 6]
    assert list(s.gpus[0]["util_pct"]) == [20, 60, 95]  # means of the medians
    assert list(s.gpus[0]["util_max_pct"]) == [90, 80, 100]  # maxima of the maxima
    assert list(s.host["mem_available_min_bytes"]) == [4, 2, 1]  # minima of the minima
    assert list(s.samples) == [20, 20, 20]
    with pytest.raises(ValueError):
        Store([0], 1.0, 1)


def _judged(w: Windower) -> RunReport:
    return judge(Recording(kind="run", command=[], meta=RunMeta(gpus={"0": H200_STATIC}), gpus=[0], windows=w), 0)


def test_a_steady_run_gets_the_same_verdict_compacted_as_whole():
    times = [T0 + 0.5 * i for i in range(2 * 3000)]  # 3,000 s at 2 Hz
    small, whole = _judged(_fed(SMALL, times)), _judged(_fed(CAPACITY, times))
    a, b = small.verdict.per_gpu["0"], whole.verdict.per_gpu["0"]
    assert a.bottleneck == b.bottleneck == B.compute_bound and a.shares == b.shares == {"compute_bound": 1.0}
    assert [(r.start_s, r.end_s, r.regime) for r in a.timeline] == [(r.start_s, r.end_s, r.regime) for r in b.timeline]
    assert all(a.evidence[k] == b.evidence[k] for k in ("util_pct", "sm_active_pct", "tensor_active_pct"))


def test_two_long_regimes_stay_apart_once_compacted():
    # 1,500 s input-starved, then 1,500 s computing: the regimes' length is read against the windows' real
    # length (a claimed length thousands of times too long had folded the second regime into the first)
    times = [T0 + 0.5 * i for i in range(2 * 3000)]
    phase = lambda t: "starved" if t < T0 + 1500 else "compute"
    w = _fed(SMALL, times, phase)
    small, whole = _judged(w), _judged(_fed(CAPACITY, times, phase))
    a, b = small.verdict.per_gpu["0"], whole.verdict.per_gpu["0"]
    assert [r.regime for r in a.timeline] == [r.regime for r in b.timeline] == ["input_starved", "compute_bound"]
    assert abs(a.timeline[0].end_s - b.timeline[0].end_s) <= w.window_s
    assert a.bottleneck == b.bottleneck
    for cause in ("input_starved", "compute_bound"):
        assert a.shares[cause] == pytest.approx(b.shares[cause], abs=w.window_s / 3000)
