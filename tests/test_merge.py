"""Merging the sampler's verdict with the trace's (`run --profile`)."""

from __future__ import annotations

from gputriage.monitor.session import profiler_effect
from gputriage.trace.merge import merge


def test_the_trace_settles_what_the_sampler_could_not_tell_apart():
    m = merge({"bottleneck": "input_starved", "undecided_between": ["input_starved", "launch_bound"]},
              {"bottleneck": "launch_bound"})
    assert m["bottleneck"] == "launch_bound" and m["source"] == "trace"
    assert "input_starved from launch_bound" in m["why"]


def test_what_only_the_sampler_sees_stands():
    m = merge({"bottleneck": "contended", "undecided_between": []}, {"bottleneck": "compute_bound"})
    assert m["bottleneck"] == "contended" and m["source"] == "sampler"


def test_no_trace_verdict_keeps_the_sampler():
    assert merge({"bottleneck": "memory_bound"}, {"bottleneck": None})["bottleneck"] == "memory_bound"
    assert merge({"bottleneck": "memory_bound"}, None)["source"] == "sampler"


def test_a_host_bound_trace_from_a_window_the_profiler_starved_does_not_override():
    sampler = {"bottleneck": "compute_bound", "undecided_between": []}
    trace = {"bottleneck": "input_starved"}
    starved = merge(sampler, trace, {"inside_pct": 26.0, "outside_pct": 95.0})
    assert starved["bottleneck"] == "compute_bound" and starved["source"] == "sampler"
    assert "26%" in starved["why"] and "95%" in starved["why"]
    # the same verdicts with the GPU as busy while profiled: the trace is believed
    assert merge(sampler, trace, {"inside_pct": 90.0, "outside_pct": 95.0})["bottleneck"] == "input_starved"
    # a trace verdict about the kernels is not a profiler artefact
    assert merge(sampler, {"bottleneck": "memory_bound"}, {"inside_pct": 26.0, "outside_pct": 95.0})["bottleneck"] \
        == "memory_bound"


def _samples(utils: list[float], t0: float = 1000.0) -> list[dict]:
    return [{"t": t0 + 0.1 * i, "gpus": [{"index": 0, "util": u}]} for i, u in enumerate(utils)]


def test_profiler_effect_compares_the_window_with_the_rest_of_the_steady_run():
    # 1 s of start-up at 0%, 3 s steady at 95%, 1 s profiled at 30%, 1 s steady at 95%
    samples = _samples([0.0] * 10 + [95.0] * 30 + [30.0] * 10 + [95.0] * 10)
    effect = profiler_effect(samples, 0, {"startup_s": 1.0}, [1004.0, 1004.95])
    assert effect == {"inside_pct": 30.0, "outside_pct": 95.0}
    assert profiler_effect(samples, 0, {"startup_s": 1.0}, None) is None
    assert profiler_effect(samples, 0, {"startup_s": 1.0}, [2000.0, 2001.0]) is None  # no sample inside


def test_the_time_the_profiler_held_the_workload_is_not_the_baseline():
    # steady at 95%, then 2 s at 0% while CUPTI drained the queue, 1 s profiled at 90%, 1 s export at 0%
    samples = _samples([95.0] * 30 + [0.0] * 20 + [90.0] * 10 + [0.0] * 10 + [95.0] * 10)
    held, window = [1003.0, 1006.95], [1005.0, 1005.95]
    assert profiler_effect(samples, 0, {"startup_s": 0.0}, window, held) == {"inside_pct": 90.0, "outside_pct": 95.0}


def _session_over(rows, make_host):
    from gputriage.monitor.classify import from_flat_rows
    from gputriage.monitor.session import Session
    from gputriage.testing.stream_nvml import StreamNvml

    session = Session(StreamNvml(rows), make_host(), None, "run", ["python", "train.py"])
    session.sampler.samples = from_flat_rows(rows)  # the recorded stream, as if sampled
    return session, session.sampler.samples


def test_a_profiled_run_merges_the_trace_and_keeps_the_profilers_own_effect_apart(make_host):
    import json
    from pathlib import Path

    from gputriage.model.finding import Finding, Severity

    rows = json.loads((Path(__file__).parent / "fixtures/h200/scenario_samples.json").read_text())["healthy_bf16"]["samples"]
    starved = Finding(id="trace.input_starved", severity=Severity.warn, step=2, symptom="GPU idle 70%", cause="host",
                      decision="feed it")

    # the recorded compute-bound stream; the profiled window is as busy as the rest: the trace is believed
    session, samples = _session_over(rows, make_host)
    t_mid = samples[len(samples) // 2]["t"]
    trace = {"verdict": {"bottleneck": "input_starved"}, "profile_window_s": [t_mid, t_mid + 1.0],
             "profiler_held_s": [t_mid - 0.5, t_mid + 1.5]}
    verdict, findings = session.finish(0, [starved], trace)
    assert verdict["bottleneck"] == "input_starved" and verdict["source"] == "trace"
    assert verdict["profiler_effect"]["inside_pct"] >= 90

    # the same with GPU-Util low inside the profiled window: the profiler starved it, the sampler stands
    session, samples = _session_over(rows, make_host)
    for s in samples:
        if t_mid <= s["t"] <= t_mid + 1.0:
            s["gpus"][0]["util"] = 20
    verdict, findings = session.finish(0, [starved], trace)
    assert verdict["bottleneck"] == "compute_bound" and "overhead" in verdict["merged"]["why"]
    kept = next(f for f in findings if f.id == "trace.input_starved")
    assert kept.severity == Severity.info and kept.symptom.endswith("(while profiled)")


def test_host_side_trace_findings_from_a_starved_window_are_information(make_host):
    import json
    from pathlib import Path

    from gputriage.model.finding import Finding, Severity

    # as recorded on the H200 (item_sync --fixed under --profile): the trace's verdict is compute_bound,
    # but its 50 ms window, GPU-Util 0% while profiled against 100% otherwise, left a host-side idle finding
    rows = json.loads((Path(__file__).parent / "fixtures/h200/scenario_samples.json").read_text())["healthy_bf16"]["samples"]
    host_idle = Finding(id="trace.input_starved", severity=Severity.warn, step=2, symptom="GPU idle 15.1%",
                        cause="host", decision="feed it")
    kernels = Finding(id="trace.memory_bound", severity=Severity.warn, step=2, symptom="elementwise 23%",
                      cause="unfused", decision="fuse")
    session, samples = _session_over(rows, make_host)
    t_mid = samples[len(samples) // 2]["t"]
    for s in samples:
        if t_mid <= s["t"] <= t_mid + 1.0:
            s["gpus"][0]["util"] = 0
    trace = {"verdict": {"bottleneck": "compute_bound"}, "profile_window_s": [t_mid, t_mid + 1.0]}
    verdict, findings = session.finish(0, [host_idle, kernels], trace)
    assert verdict["bottleneck"] == "compute_bound" and verdict["merged"]["profiler_starved"]
    got = {f.id: f for f in findings}
    assert got["trace.input_starved"].severity == Severity.info and "0% while profiled" in got["trace.input_starved"].cause
    assert got["trace.memory_bound"].severity == Severity.warn  # about the kernels: not the profiler's doing


def test_the_shut_down_is_not_the_baseline_either():
    # 3 s steady at 95%, 1 s profiled at 30%, 1 s steady at 95%, then 6 s of shut-down at 0%
    samples = _samples([95.0] * 30 + [30.0] * 10 + [95.0] * 10 + [0.0] * 60)
    judged = {"startup_s": 0.0, "shutdown_s": 6.0}
    assert profiler_effect(samples, 0, judged, [1003.0, 1003.95]) == {"inside_pct": 30.0, "outside_pct": 95.0}
