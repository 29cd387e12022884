"""torch.compile on an H200: compile_graph_breaks.py for 20 s under `gputriage run` in its three modes, judged again
by today's rules from what the workload reported (dynamo's record of each compilation) and the samples."""

from __future__ import annotations

import re

from recordings import judged, runs


def test_the_h200_recording_names_the_break_and_the_recompilations_in_every_mode():
    # compile_graph_breaks.py for 20 s on an H200, in the three modes: dynamo's record, read in the workload
    live = runs("runs_live_rerun.json.gz")
    for mode in ("default", "no_profile", "no_gpm"):
        report = judged(live[f"compile_graph_breaks_20s.{mode}"])
        found = {f.id: f for f in report.findings}
        assert "compile_graph_breaks.py:27 in forward()" in found["run.graph_breaks"].symptom, mode
        assert "Tensor.item()" in found["run.graph_breaks"].symptom, mode
        recompiled = re.search(r"recompiled (\d+) times", found["run.recompiles"].symptom)
        assert recompiled is not None and int(recompiled.group(1)) >= 10, mode
        assert "recompile limit" in found["run.recompiles"].symptom, mode
        assert not any("gputriage" in (f.file or "") for f in report.compile.compiled_functions), mode


def test_recompilations_after_the_first_step_are_no_warm_up():
    # without GPM the eager phase after dynamo's recompile limit was the longest, and the 2 s of recompiling before
    # it read as warm-up; the seconds in which the main thread compiles stay the workload's own (host_bound)
    timeline = judged(runs("runs_live_rerun.json.gz")["compile_graph_breaks_20s.no_gpm"]).verdict.per_gpu["0"].timeline
    warm = [r for r in timeline if r.regime == "warm-up"]
    compiling = [r for r in timeline if r.regime == "host_bound"]
    assert compiling and all(w.end_s <= compiling[0].start_s for w in warm)


def test_a_run_that_looks_launch_bound_because_dynamo_gave_up_says_to_fix_the_compilation_first():
    # past the recompile limit the model runs eagerly: run third, with inductor's cache warm, it compiled for 3.2 s of
    # its 20 (the first two runs 18.6 and 14.7 s), the eager phase lasted longest and the run reads launch-bound; the
    # decision starts with what made it eager
    live = runs("runs_live_rerun.json.gz")
    seconds = [judged(live[f"compile_graph_breaks_20s.{m}"]).compile.compile_s for m in ("default", "no_profile")]
    report = judged(live["compile_graph_breaks_20s.no_gpm"])
    assert report.compile is not None and report.compile.compile_s < 5.0 < 10.0 < min(seconds)
    assert report.verdict.bottleneck is not None and report.verdict.bottleneck.value == "launch_bound"
    decision = report.verdict.per_gpu["0"].decision
    assert decision.startswith("torch.compile gave up on forward() (compile_graph_breaks.py:22) (the recompile limit)")
    # a run that compiled without giving up keeps its decision as it was
    healthy = judged(runs("runs_live_rerun.json.gz")["paced_queue_service_12s.default"])
    assert "torch.compile" not in healthy.verdict.per_gpu["0"].decision


def test_compiling_from_cold_caches_is_host_work_in_every_mode():
    # compile_graph_breaks.py with inductor's and Triton's caches emptied before each run, on an H200: the main
    # thread compiles about half its steady time and runs torch's Python (guards, the eager fallback) the rest while
    # the GPU runs nothing. The first batch was recorded before inductor's compile-worker threads (a pipe read, a
    # timer's sleep) counted as waits: live, --no-profile took them for busy threads and said sync_bound
    live = runs("runs_host_side_rerun.json.gz")
    for batch in ("cold1", "cold2"):
        for mode in ("default", "no_profile", "no_gpm"):
            report = judged(live[f"compile_graph_breaks_{batch}.{mode}"])
            v = report.verdict.per_gpu["0"]
            assert v.bottleneck.value == "host_bound", (batch, mode)
            assert "the main thread compiles" in v.summary, (batch, mode)  # what it did, not the CPU's figures
            assert report.compile is not None and report.compile.recompiles >= 10, (batch, mode)
            shares = report.stacks.main_shares
            assert shares["compile"] >= 0.4 and shares["compile"] + shares["launch"] >= 0.9, (batch, mode)
