"""A command that fails before its steady state gets no verdict (advice for a job that never ran would mislead);
one that fails after a steady run keeps its verdict; on H200 recordings."""

from __future__ import annotations

from gputriage.diagnosis.run.gather import FAILED_EARLY
from gputriage.diagnosis.run.judge import judge
from gputriage.model.bottleneck import Bottleneck as B
from recordings import judged, recorded, runs

UNSEEN4 = runs("runs_unseen4.json.gz")


def test_a_command_that_fails_before_a_steady_state_gets_no_verdict():
    # the first fp8_gemm.py and scatter_messages.py died after 3-4 s (a TypeError in the script): the sampler had
    # called them idle and input_starved, with advice for a job that never ran
    for name in ("fp8_crashed_gpm", "scatter_crashed_nogpm"):
        rec = UNSEEN4[name]
        report = judged(rec)
        assert rec["exit_code"] == 1 and report.verdict.bottleneck is None
        v = report.verdict.per_gpu["0"]
        assert v.summary.startswith("no verdict: the command failed (exit 1) after") and not v.decision
        assert not [f for f in report.findings if f.id.startswith("run.") and f.id != "run.job_shares_gpu"]
        assert judge(recorded(rec), 0).verdict.bottleneck is not None  # the same samples, exit 0: judged
        assert judge(recorded(rec), 130).verdict.bottleneck is not None  # stopped by Ctrl-C: judged
    long = UNSEEN4["healthy_gpm"]  # a failure after a steady run (an OOM an hour in) keeps its verdict
    assert recorded(long).ended_s - recorded(long).started_s >= FAILED_EARLY.value
    assert judge(recorded(long), 1).verdict.bottleneck == B.compute_bound
