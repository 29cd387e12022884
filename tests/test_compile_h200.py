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
