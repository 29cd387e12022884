"""Merging the sampler's verdict with the trace's (`run --profile`)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from conftest import judged
from gputriage.diagnosis.run.judge import profiler_effect
from gputriage.diagnosis.run.merge import merge
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, Severity
from gputriage.model.run import GpuStatic, GpuVerdict, ProfilerEffect, ProfileReport, RunMeta
from gputriage.model.sample import GpuSample, Sample
from gputriage.model.trace import TraceReport, TraceVerdict
from gputriage.sampling.session import replay
from gputriage.testing.recorded import from_flat_rows
from recordings import judged as judged_run
from recordings import runs

SCENARIOS = Path(__file__).parent / "fixtures/h200/scenario_samples.json"
ROWS = json.loads(SCENARIOS.read_text())["healthy_bf16"]["samples"]


def _v(b: str, undecided: tuple[str, ...] = ()) -> GpuVerdict:
    return GpuVerdict(gpu=0, bottleneck=B(b), undecided_between=[B(x) for x in undecided])


def _t(b: str | None, confidence: float = 0.9) -> TraceVerdict:
    return TraceVerdict(bottleneck=B(b) if b else None, confidence=confidence)


def test_the_trace_settles_what_the_sampler_could_not_tell_apart():
    m = merge(_v("input_starved", ("input_starved", "launch_bound")), _t("launch_bound"))
    assert m.bottleneck == B.launch_bound and m.source == "trace"
    assert "input_starved from launch_bound" in m.why


def test_what_only_the_sampler_sees_stands():
    m = merge(_v("contended"), _t("compute_bound"))
    assert m.bottleneck == B.contended and m.source == "sampler"


def test_no_trace_verdict_keeps_the_sampler():
    assert merge(_v("memory_bound"), _t(None)).bottleneck == B.memory_bound
    assert merge(_v("memory_bound"), None).source == "sampler"


def test_a_host_bound_trace_from_a_window_the_profiler_starved_does_not_override():
    sampler, trace = _v("compute_bound"), _t("input_starved")
    starved = merge(sampler, trace, ProfilerEffect(inside_pct=26.0, outside_pct=95.0))
    assert starved.bottleneck == B.compute_bound and starved.source == "sampler"
    assert "26%" in starved.why and "95%" in starved.why
    # the same verdicts with the GPU as busy while profiled as otherwise: the trace is believed (below 90%
    # outside; at 90% or more, a host-side trace is the profiler's overhead: test_profiler_lifecycle.py)
    assert merge(sampler, trace, ProfilerEffect(inside_pct=80.0, outside_pct=85.0)).bottleneck == B.input_starved
    # nor does any trace verdict from a window unlike the rest of the run: a batch-1 decode profiled at
    # GPU-Util 18% in a run at 95% is no picture of the run, whatever its kernels say
    unlike = merge(_v("memory_bound"), _t("compute_bound"), ProfilerEffect(18.0, 95.0))
    assert unlike.bottleneck == B.memory_bound and "unlike the rest of the run" in unlike.why
    assert merge(sampler, _t("memory_bound"), ProfilerEffect(90.0, 95.0)).bottleneck == B.memory_bound


def test_a_trace_unsure_of_itself_does_not_override_a_decided_sampler():
    short = merge(_v("compute_bound"), _t("input_starved", confidence=0.2))
    assert short.bottleneck == B.compute_bound and "unsure" in short.why
    # where the sampler could not decide, even an unsure trace is the best word there is
    assert (
        merge(_v("sync_bound", ("sync_bound", "input_starved")), _t("input_starved", 0.2)).bottleneck == B.input_starved
    )


def _recording(utils: list[float], t0: float = 1000.0):
    """A recording of GPU-Util at 10 Hz, its samples still in the ring."""
    samples = [Sample(t_s=t0 + 0.1 * i, gpus=[GpuSample(index=0, util_pct=u)]) for i, u in enumerate(utils)]
    rec = replay(samples, RunMeta(gpus={"0": GpuStatic()}))
    rec.recent = samples
    return rec


def test_profiler_effect_compares_the_window_with_the_rest_of_the_steady_run():
    # 1 s of start-up at 0%, 3 s steady at 95%, 1 s profiled at 30%, 1 s steady at 95%
    rec = _recording([0.0] * 10 + [95.0] * 30 + [30.0] * 10 + [95.0] * 10)
    v = GpuVerdict(gpu=0, startup_s=1.0)
    assert profiler_effect(rec, 0, v, [1004.0, 1004.95]) == ProfilerEffect(30.0, 95.0)
    assert profiler_effect(rec, 0, v, None) is None
    assert profiler_effect(rec, 0, v, [2000.0, 2001.0]) is None  # no sample inside


def test_the_time_the_profiler_held_the_workload_is_not_the_baseline():
    # steady at 95%, then 2 s at 0% while CUPTI drained the queue, 1 s profiled at 90%, 1 s export at 0%
    utils = [95.0] * 30 + [0.0] * 20 + [90.0] * 10 + [0.0] * 10 + [95.0] * 10
    rec = _recording(utils)
    held, window = [1003.0, 1006.95], [1005.0, 1005.95]
    assert profiler_effect(rec, 0, GpuVerdict(gpu=0), window, [held]) == ProfilerEffect(90.0, 95.0)
    # a window profiled again: the first window's hold is no baseline either
    utils = [95.0] * 30 + [0.0] * 60 + [95.0] * 10 + [0.0] * 20 + [90.0] * 10 + [0.0] * 10 + [95.0] * 10
    rec = _recording(utils)
    first, second, window = [1003.0, 1008.95], [1010.0, 1013.95], [1012.0, 1012.95]
    assert profiler_effect(rec, 0, GpuVerdict(gpu=0), window, [second]).outside_pct < 95.0
    assert profiler_effect(rec, 0, GpuVerdict(gpu=0), window, [first, second]) == ProfilerEffect(90.0, 95.0)


def test_the_shut_down_is_not_the_baseline_either():
    # 3 s steady at 95%, 1 s profiled at 30%, 1 s steady at 95%, then 6 s of shut-down at 0%
    utils = [95.0] * 30 + [30.0] * 10 + [95.0] * 10 + [0.0] * 60
    rec = _recording(utils)
    assert profiler_effect(rec, 0, GpuVerdict(gpu=0, shutdown_s=6.0), [1003.0, 1003.95]) == ProfilerEffect(30.0, 95.0)


def test_the_effect_is_read_from_the_windows_once_the_ring_has_moved_on():
    rec = _recording([95.0] * 30 + [30.0] * 10 + [95.0] * 30)
    rec.recent = []
    assert profiler_effect(rec, 0, GpuVerdict(gpu=0), [1003.0, 1003.99]) == ProfilerEffect(30.0, 95.0)


def _profile(t_mid: float, bottleneck: str, findings: list[Finding]) -> ProfileReport:
    trace = TraceReport(verdict=_t(bottleneck), findings=findings)
    return ProfileReport(trace=trace, window_s=[t_mid, t_mid + 1.0], held_s=[t_mid - 0.5, t_mid + 1.5])


def test_a_profiled_run_merges_the_trace_and_keeps_the_profilers_own_effect_apart():
    starved = Finding(
        id="trace.input_starved",
        severity=Severity.warn,
        step=4,
        symptom="GPU idle 70%",
        cause="host",
        decision="feed it",
    )
    samples = from_flat_rows(ROWS)
    t_mid = samples[len(samples) // 2].t_s
    # the recorded compute-bound stream; the profiled window is as busy as the rest: a trace about its kernels is
    # believed (a host-side one, at this GPU-Util, is the profiler's overhead: test_profiler_lifecycle.py)
    report = judged(samples, profile=_profile(t_mid, "memory_bound", []))
    assert report.verdict.bottleneck == B.memory_bound and report.verdict.source == "trace"
    assert report.verdict.profiler_effect.inside_pct >= 90
    # the same with GPU-Util low inside the profiled window: the profiler starved it, the sampler stands
    for s in samples:
        if t_mid <= s.t_s <= t_mid + 1.0:
            s.gpus[0] = msgspec.structs.replace(s.gpus[0], util_pct=20)
    report = judged(samples, profile=_profile(t_mid, "input_starved", [starved]))
    assert report.verdict.bottleneck == B.compute_bound and "overhead" in report.verdict.merged.why
    kept = next(f for f in report.findings if f.id == "trace.input_starved")
    assert kept.severity == Severity.info and kept.symptom.endswith("(while profiled)")


def test_host_side_trace_findings_from_a_starved_window_are_information():
    # as recorded on the H200 (item_sync --fixed under --profile): the trace's verdict is compute_bound,
    # but its window, GPU-Util 0% while profiled against 100% otherwise, left a host-side idle finding
    host_idle = Finding(
        id="trace.input_starved",
        severity=Severity.warn,
        step=4,
        symptom="GPU idle 15.1%",
        cause="host",
        decision="feed it",
    )
    kernels = Finding(
        id="trace.memory_bound",
        severity=Severity.warn,
        step=2,
        symptom="elementwise 23%",
        cause="unfused",
        decision="fuse",
    )
    samples = from_flat_rows(ROWS)
    t_mid = samples[len(samples) // 2].t_s
    for s in samples:
        if t_mid <= s.t_s <= t_mid + 1.0:
            s.gpus[0] = msgspec.structs.replace(s.gpus[0], util_pct=0, sm_active_pct=0.0)
    report = judged(samples, profile=_profile(t_mid, "compute_bound", [host_idle, kernels]))
    assert report.verdict.bottleneck == B.compute_bound and report.verdict.merged.profiler_starved
    got = {f.id: f for f in report.findings}
    assert got["trace.input_starved"].severity == Severity.info
    assert "0% while profiled" in got["trace.input_starved"].cause
    assert got["trace.memory_bound"].severity == Severity.warn  # about the kernels: not the profiler's doing


def test_an_unsure_trace_naming_a_cause_the_sampler_did_not_leave_open_does_not_settle_it():
    # host_stats under --profile auto: the profiler took 6.5 s to start and caught 77 ms before the loop ended,
    # mostly the copy of the activation to the host (confidence 0.17); the sampler had left host_bound or
    # sync_bound open, and the trace's h2d_copy_bound had overridden it
    rec = runs("runs_gallery_round6.json.gz")["host_stats"]
    trace = rec["profile"]["trace"]["verdict"]
    assert trace["bottleneck"] == "h2d_copy_bound" and trace["confidence"] < 0.5
    merged = judged_run(rec).verdict.merged
    assert merged is not None and merged.bottleneck == B.host_bound and merged.trace == B.h2d_copy_bound
    assert "none of the causes the sampler left open" in merged.why
