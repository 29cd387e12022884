"""h2d_copy_bound: copies between host and GPU take the time — copies read back get the advice for reading back,
pinned copies taking turns with the kernels are copy-bound rather than underfilled — on H200 recordings."""

from __future__ import annotations

import msgspec

from gputriage.api import analyze_trace
from gputriage.diagnosis.bottlenecks import D2H_COPY_DECISION
from gputriage.diagnosis.run.classify import COPY_TIME_SHARE, copy_time_share
from gputriage.diagnosis.trace.judge import judge_rank
from gputriage.diagnosis.trace.verdict import decide
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.trace import RankAnalysis
from recordings import FIXTURES, judged, recorded, runs

UNSEEN3 = runs("runs_unseen3.json.gz")
FIRST6 = runs("runs_unseen6.json.gz")
AGAIN6 = runs("runs_unseen6_again.json.gz")


def test_copies_read_back_from_the_gpu_get_the_advice_for_reading_back_not_for_input():
    rank = msgspec.convert(UNSEEN3["d2h_features_nogpm"]["profile"]["trace"]["ranks"][0], RankAnalysis)
    v = decide(rank.anatomy[0])
    assert v.bottleneck == B.h2d_copy_bound and v.decision == D2H_COPY_DECISION
    copies = [f for f in judge_rank(rank) if f.id == "trace.h2d_copy_bound"]
    assert copies and copies[0].decision == D2H_COPY_DECISION and copies[0].evidence["d2h_pct"] >= 90
    h2d = analyze_trace([FIXTURES / "traces" / "run_profile_pageable_copy.json.gz"])  # input sent to the GPU
    assert h2d.verdict.bottleneck == B.h2d_copy_bound and h2d.verdict.decision != D2H_COPY_DECISION


def test_pinned_copies_taking_turns_with_the_kernels_are_copy_bound_not_underfilled():
    # each 256 MiB batch pinned on the host, copied on the compute stream, then the GEMMs: GPU-Util 100%, SM
    # activity 37-45%; the first run read underfilled, its trace (no GPM) compute_bound beside 47.5% of copies
    for rec in (FIRST6["pin_every_step"], AGAIN6["pin_every_step"]):
        run = recorded(rec)
        v = judged(rec).verdict.per_gpu["0"]
        assert v.bottleneck == B.h2d_copy_bound and v.evidence["sm_active_pct"] < 50
        assert copy_time_share(v.evidence["pcie_rx_mib_per_s"], run.meta.gpus["0"]) >= COPY_TIME_SHARE.value
    report = judged(AGAIN6["pin_every_step_nogpm"])  # without GPM the trace decides
    v = report.verdict.per_gpu["0"]
    assert v.bottleneck == B.compute_bound and B.h2d_copy_bound in v.undecided_between
    assert report.verdict.merged is not None and report.verdict.merged.trace == B.h2d_copy_bound
    copies = next(f for f in report.findings if f.id == "trace.h2d_copy_bound")
    assert copies.severity.value == "warn" and "side stream" in copies.decision
