"""Where a step-reporting workload's steady state begins and ends: at its first reported step (however little the
GPU computes then) and its last (not the process exiting after), on H200 recordings."""

from __future__ import annotations

from gputriage.model.bottleneck import Bottleneck as B
from recordings import judged, runs

UNSEEN4 = runs("runs_unseen4.json.gz")
ALLOCATOR = runs("runs_allocator.json.gz")


def test_a_loop_that_reports_steps_while_the_gpu_barely_computes_is_steady_from_its_first_step():
    # recompile_shapes: a new sequence length compiled at every step, GPU-Util 1%. The steady state began at the
    # first reported step (+15 s), not when the GPU first reached 5% (+24 s): the window profiled at +23 s is in
    # the steady run, and its trace (host_bound: the host compiles) decides
    # (live, both runs said input_starved: their windows counted as start-up)
    for name, first_step_s in (("recompile_shapes_long_gpm", 15.2), ("recompile_shapes_cold_gpm", 19.2)):
        rec = UNSEEN4[name]
        report = judged(rec)
        v = report.verdict.per_gpu["0"]
        effect = report.verdict.profiler_effect  # None when no 1 s window has its middle inside the profiled 0.9 s
        assert v.startup_s == first_step_s and (effect is None or not effect.in_startup)
        assert report.verdict.bottleneck == B.host_bound and report.verdict.merged.trace == B.host_bound
        assert rec["verdict"] == "input_starved" and v.evidence["util_pct"] <= 1


def test_the_steady_state_of_a_step_reporting_workload_ends_with_its_last_step():
    # an 8 s loop held 7 s by the profiler: after the window, the loop was over and the process exiting (GPU idle,
    # a thread busy); those windows were counted as input_starved, half the steady state
    v = judged(ALLOCATOR["adam_foreach_off_gpm"]).verdict.per_gpu["0"]
    assert v.bottleneck == B.launch_bound and v.shares == {"launch_bound": 1.0}
    assert v.timeline[-1].regime == "shut-down"
