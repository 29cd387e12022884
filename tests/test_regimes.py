"""A long run judged regime by regime: each phase gets its own cause and decision, and a change of regime in the
middle of the run is `run.regime_changed` (when, from what to what, the workload's rate before and after).

The long run is stitched from real H200 recordings (`runs_typed.json.gz`): the gallery's compute-bound loop, then
its input-starved loop, then the compute-bound loop again, each repeated to 30 s, on one time axis."""

from __future__ import annotations

from typing import Any

import msgspec

from gputriage.diagnosis.run.judge import judge
from gputriage.diagnosis.run.regimes import MIN_REGIME_S
from gputriage.diagnosis.run.rules.regime_changed import changes as regime_changes
from gputriage.model.run import Regime, RunMeta
from gputriage.model.sample import Sample
from gputriage.sampling.session import replay
from recordings import judged, runs

COUNTERS = ("steps_total", "samples_total", "tokens_total")


def _body(rec: dict[str, Any]) -> list[dict[str, Any]]:
    """The recording's steady middle (its first and last 2 s left out), as raw samples."""
    s = rec["samples"]
    t0, t1 = s[0]["t_s"], s[-1]["t_s"]
    return [x for x in s if t0 + 2.0 <= x["t_s"] <= t1 - 2.0]


def stitched(parts: list[tuple[dict[str, Any], float]]) -> list[Sample]:
    """Recordings' steady middles laid end to end, each repeated to `seconds`; the workload's cumulative step
    counters carried over so the rate of each part is its own."""
    out: list[Sample] = []
    t, carried = 1_000.0, dict.fromkeys(COUNTERS, 0.0)
    for rec, seconds in parts:
        body = _body(rec)
        start = t
        while t - start < seconds:
            base_t = body[0]["t_s"]
            first = {k: (body[0].get("progress") or {}).get(k) for k in COUNTERS}
            last = dict(carried)
            for x in body:
                y = msgspec.json.decode(msgspec.json.encode(x))
                y["t_s"] = t + (x["t_s"] - base_t)
                prog = y.get("progress")
                if prog:
                    for k in COUNTERS:
                        if prog.get(k) is not None and first[k] is not None:
                            prog[k] = carried[k] + prog[k] - first[k]
                            last[k] = prog[k]
                out.append(msgspec.convert(y, Sample))
            t = out[-1].t_s + 0.1
            carried = last
    return out


def test_a_run_that_starves_in_the_middle_has_three_regimes_and_two_changes() -> None:
    typed = runs("runs_typed.json.gz")
    fast, starved = typed["healthy"], typed["input_starved"]
    samples = stitched([(fast, 30.0), (starved, 30.0), (fast, 30.0)])
    rec = replay(samples, msgspec.convert(fast["meta"], RunMeta), command=["python", "train.py"])
    report = judge(rec, 0)
    timeline = [r for r in report.verdict.per_gpu["0"].timeline if r.end_s - r.start_s >= MIN_REGIME_S.value]
    assert [r.regime for r in timeline] == ["compute_bound", "input_starved", "compute_bound"]
    starving = timeline[1]
    assert starving.summary.endswith("input_starved") and starving.decision
    assert starving.evidence["util_pct"] < timeline[0].evidence["util_pct"]
    changes = [f for f in report.findings if f.id == "run.regime_changed"]
    assert [(f.evidence["from"], f.evidence["to"]) for f in changes] == [
        ("compute_bound", "input_starved"),
        ("input_starved", "compute_bound"),
    ]
    assert 25.0 <= changes[0].evidence["at_s"] <= 40.0
    assert changes[0].decision == starving.decision  # what to do about the new regime


def test_blips_and_edges_are_no_regime_change() -> None:
    timeline = [
        Regime(0.0, 3.0, "start-up"),
        Regime(3.0, 40.0, "compute_bound"),
        Regime(40.0, 44.0, "host_bound"),
        Regime(44.0, 90.0, "compute_bound"),
        Regime(90.0, 91.0, "shut-down"),
    ]
    assert regime_changes(0, timeline, 1.0) == []
    longer = [*timeline[:2], Regime(40.0, 60.0, "host_bound"), Regime(60.0, 90.0, "compute_bound")]
    assert [f.evidence["to"] for f in regime_changes(0, longer, 1.0)] == ["host_bound", "compute_bound"]


def test_a_job_recorded_changing_regime_on_an_h200_names_each_regime_and_both_changes() -> None:
    """`examples/workloads/regime_shift.py --seconds 180` under `gputriage run` on an H200: 60 s of bf16 GEMMs, 60 s
    waiting 150 ms on the host every step, 60 s of GEMMs again; profiled once (`--profile auto`), in the middle."""
    rec = runs("runs_regime_shift.json.gz")["regime_shift"]
    report = judged(rec)
    lasting = [r for r in report.verdict.per_gpu["0"].timeline if r.summary]
    assert [r.regime for r in lasting][0::2] == ["compute_bound", "compute_bound"]
    assert lasting[1].regime != "compute_bound" and lasting[1].evidence["util_pct"] < 50
    changes = [f for f in report.findings if f.id == "run.regime_changed"]
    assert [round(f.evidence["at_s"] / 10) * 10 for f in changes] == [70, 130]  # +74 s and +134 s
    assert changes[0].evidence["rate_after"] < 0.5 * changes[0].evidence["rate_before"]
    assert "-80%" in changes[0].symptom


def test_a_trace_of_one_regime_does_not_decide_a_run_of_several():
    # regime_shift on an H200 (180 s: GEMMs, a slow input, GEMMs): its one profile fell in the slow regime and its
    # trace said sync_bound; the run stays compute_bound, the trace's findings stand for that regime
    report = judged(runs("runs_regime_shift.json.gz")["regime_shift"])
    assert report.verdict.bottleneck is not None and report.verdict.bottleneck.value == "compute_bound"
    assert report.verdict.merged is not None and "input_starved regime" in report.verdict.merged.why
    assert "trace.sync_bound" in {f.id for f in report.findings}


def test_what_the_profiler_cost_is_measured_against_the_regime_each_window_fell_in():
    # 200 s, a window re-armed in the slow regime (GPU-Util ~30% there by itself) and one asked in the last fast
    # regime: compared with the whole run, the first read as a profiler that took GPU-Util from 100% to 31%
    report = judged(runs("runs_regime_shift_rearm.json.gz")["regime_shift_next_batch"])
    assert report.profile is not None
    assert [w.regime for w in report.profile.windows] == ["input_starved", "compute_bound"]
    effect = report.profile.effects["0"]
    assert abs(effect.outside_pct - effect.inside_pct) < 10.0
    assert [f.evidence["to"] for f in report.findings if f.id == "run.regime_changed"] == [
        "input_starved",
        "compute_bound",
    ]


def test_a_long_run_under_profile_has_a_trace_of_each_regime_and_each_regime_its_lines():
    # 198 s on an H200 under `run --profile`: the steady state profiled, then the profiler re-armed in the slow
    # regime and again when it was fast again; the slow regime's summary names the function that waits
    report = judged(runs("runs_live_rerun.json.gz")["regime_shift_181_profiled"])
    assert report.profile is not None
    windows = [(w.kind, w.regime, w.bottleneck.value if w.bottleneck else None) for w in report.profile.windows]
    assert windows == [
        ("steady", "compute_bound", "compute_bound"),
        ("regime", "input_starved", "input_starved"),
        ("regime", "compute_bound", "compute_bound"),
    ]
    slow = next(r for r in report.verdict.per_gpu["0"].timeline if r.regime == "input_starved")
    assert "regime_shift.py:20 in next_batch" in slow.summary
    effect = report.profile.effects["0"]  # the hold in the slow regime is that regime's GPU-Util, not the profiler's
    assert effect.held_pct is not None and effect.held_pct > 90.0
