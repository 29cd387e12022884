"""The trace's rules (`diagnosis/trace/rules`): each reads one rank's window or the job's ranks, as its `evaluate`
declares; its words, thresholds and the impact of its fix come from its own module; the renderers draw what the
judge recorded. Recorded H200 traces."""

from __future__ import annotations

import io
from pathlib import Path

import msgspec
from rich.console import Console

from gputriage import api
from gputriage.diagnosis.impact import estimate
from gputriage.diagnosis.rule import rules_of
from gputriage.diagnosis.trace.base import FINDING_MIN
from gputriage.diagnosis.trace.evidence import RankEvidence, RanksEvidence, reads
from gputriage.diagnosis.trace.judge import rules_reading
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Severity
from gputriage.model.trace import Anatomy, RankAnalysis, SyncOp, Syncs, TimeShare, TraceVerdict
from gputriage.report.html_trace import trace_page
from gputriage.report.trace_terminal import render
from gputriage.trace import kernel_kinds as kk

TRACES = Path(__file__).parent / "fixtures" / "h200" / "traces"


def terminal(report) -> str:
    console = Console(record=True, width=200, file=io.StringIO())
    render(report, console)
    return console.export_text()


def window(busy: dict[str, float], idle: dict[str, float], **kw) -> RankEvidence:
    """A rank of a 100 ms window, its busy and idle time (µs) by kind."""
    w = 100_000.0
    a = Anatomy(
        device=0,
        window_us=w,
        busy_us=sum(busy.values()),
        idle_us=sum(idle.values()),
        busy_pct=100 * sum(busy.values()) / w,
        busy={k: TimeShare(v, 100 * v / w) for k, v in busy.items()},
        idle={k: TimeShare(v, 100 * v / w) for k, v in idle.items()},
        kernels=500,
        **kw,
    )
    rank = RankAnalysis(file="t.json", anatomy=[a], main_device=0)
    return RankEvidence(rank, a, TraceVerdict(bottleneck=B.compute_bound), None)


def findings(ev: RankEvidence) -> dict[str, object]:
    return {f.id: f for rule in rules_reading(RankEvidence) for f in rule.evaluate(ev)}


def test_each_rule_reads_one_ranks_window_or_the_jobs_ranks() -> None:
    rules = rules_of("trace")
    assert {reads(r) for r in rules} == {RankEvidence, RanksEvidence}
    assert {r.id for r in rules_reading(RanksEvidence)} == {"trace.stragglers", "trace.ranks_disagree"}
    assert len(rules_reading(RankEvidence)) + len(rules_reading(RanksEvidence)) == len(rules)


def test_a_changed_threshold_changes_every_condition_that_names_it() -> None:
    """The entries once built positionally wrote "10%" by hand: a threshold of 12 would have left them at 10."""
    named = 0
    for rule in rules_of("trace"):
        spec = rule.spec
        if FINDING_MIN.name not in spec.threshold_values():
            continue
        moved = msgspec.structs.replace(
            spec,
            thresholds=tuple(
                msgspec.structs.replace(t, value=12.0) if t is FINDING_MIN else t for t in spec.thresholds
            ),
        )
        assert ">= 12%" in moved.rendered().condition and ">= 10%" not in moved.rendered().condition, spec.id
        named += 1
    assert named >= 10


def test_the_impact_of_a_finding_is_its_rules_and_a_stored_one_without_it_gets_the_same() -> None:
    # recorded on the H200: a loop starved by its host, several idle causes above the threshold
    report = api.analyze_trace(TRACES / "trace_starved.json.gz")
    shares = {
        "trace.launch_bound": "launch_idle_pct",
        "trace.input_starved": "host_outside_ops_pct",
        "trace.sync_bound": "sync_idle_pct",
        "trace.h2d_copy_bound": "copies_pct",
    }
    seen = [f for f in report.findings if f.id in shares]
    assert seen
    for f in seen:
        assert f.impact == round(f.evidence[shares[f.id]] / 100, 3)
        # a finding stored before its rule carried its impact (an earlier run store) gets the same figure back
        assert estimate(msgspec.structs.replace(f, impact=None)) == f.impact


def test_copies_at_the_links_speed_with_little_compute_beside_them_are_information() -> None:
    ev = window({kk.H2D_PINNED: 15_000.0, kk.GEMM_TC: 5_000.0}, {"launch": 1_000.0})
    f = findings(ev)["trace.h2d_copy_bound"]
    assert f.severity == Severity.info and "The link is the limit" in f.decision
    assert f.symptom == "Host↔device copies take 15.0% of the window (0.0% from pageable memory, 0.0% device to host)"
    beside = window({kk.H2D_PINNED: 15_000.0, kk.GEMM_TC: 60_000.0}, {"launch": 1_000.0})
    f = findings(beside)["trace.h2d_copy_bound"]
    assert f.severity == Severity.warn and "side stream" in f.decision and f.impact == 0.15


def test_one_sync_is_one_call_and_launches_behind_syncs_are_told_to_remove_them_first() -> None:
    syncs = Syncs(count=1, by_op=[SyncOp(op="aten::item", calls=1, host_blocked_us=5.0, gpu_idle_after_us=12_000.0)])
    ev = window({kk.ELEMENTWISE: 5_000.0}, {"sync": 12_000.0, "launch": 70_000.0}, syncs=syncs)
    found = findings(ev)
    assert found["trace.sync_bound"].cause.startswith("1 synchronizing call drained the GPU queue")
    assert "Most from: aten::item (1x)" in found["trace.sync_bound"].cause
    assert found["trace.launch_bound"].decision.startswith("First remove the host synchronizations in the loop")
    assert "aten::item ×1" in found["trace.launch_bound"].decision
    assert found["trace.launch_bound"].impact == 0.7


def test_under_each_threshold_a_rule_is_silent() -> None:
    just_under = (FINDING_MIN.value - 0.1) * 1000  # µs of a 100 ms window
    ev = window(
        {kk.GEMM_TC: 100_000 - 6 * just_under, kk.COMM: just_under, kk.GEMM_OTHER: just_under},
        dict.fromkeys(("launch", "sync", "host_outside_ops", "allocator"), just_under),
    )
    assert not findings(ev)


def test_the_terminal_says_too_little_work_from_what_the_judge_recorded() -> None:
    # recorded on the H200: a window of 6 kernels
    short = api.analyze_trace([TRACES / "too_short_window.json.gz"])
    assert short.verdict.too_little and short.verdict.tentative
    assert "too little GPU work to judge: 6 kernels, 0.9 ms busy in a 125.0 ms window; a guess" in terminal(short)
    short.verdict.too_little = False  # the renderer judges nothing of its own
    out = terminal(short)
    assert "a guess" not in out and "trace verdict (tentative): host_bound" in out
    assert not api.analyze_trace([TRACES / "healthy.json.gz"]).verdict.too_little


def test_int8_gemm_rates_are_operations_in_the_html_report_as_in_the_terminal() -> None:
    # recorded on the H200: torch._int_mm on int8 operands
    report = api.analyze_trace([TRACES / "int8_gemm.json.gz"])
    html = trace_page(report).render()
    assert "129 TOPS</td>" in html and "TFLOP/s</td>" not in html
    assert "129 TOPS" in terminal(report)
