"""Findings in the shape users act on: each with a command that verifies the fix (`verify`), and where the evidence
allows, the share of the GPU's time the fix would recover (`impact`); reports rank findings by it."""

from __future__ import annotations

from pathlib import Path

from gputriage.api import analyze_trace
from gputriage.diagnosis.verify import Context, command_for
from gputriage.model.finding import Finding, Severity, triage_order
from recordings import judged, runs

TRACES = Path(__file__).parent / "fixtures" / "h200" / "traces"


def test_a_starved_runs_verdict_says_what_it_would_recover_and_how_to_verify() -> None:
    rec = runs("runs_typed.json.gz")["input_starved"]
    report = judged(rec)
    v = report.verdict.per_gpu["0"]
    idle = 1 - v.evidence.get("sm_active_pct", v.evidence["util_pct"]) / 100
    assert v.finding == "run.input_starved" and v.severity is not None
    assert v.impact is not None and abs(v.impact - v.share * idle) < 0.01 and v.impact > 0.3
    assert v.verify.startswith("gputriage run -- ") and "input_starved.py" in v.verify
    assert not [f for f in report.findings if f.id == "run.input_starved"]  # the verdict is stated once


def test_a_healthy_runs_verdict_claims_no_gain() -> None:
    report = judged(runs("runs_typed.json.gz")["healthy"])
    v = report.verdict.per_gpu["0"]
    assert v.finding == "run.compute_bound" and v.impact is None and v.verify


def test_a_regime_change_that_slowed_the_job_estimates_what_it_cost() -> None:
    report = judged(runs("runs_regime_shift.json.gz")["regime_shift"])
    slowed = next(f for f in report.findings if f.id == "run.regime_changed" and f.evidence["to"] != "compute_bound")
    assert slowed.impact is not None and 0.3 < slowed.impact < 0.9  # -80% over half of the 120 s it spans


def test_trace_findings_rank_by_their_share_and_verify_with_a_new_trace() -> None:
    report = analyze_trace(TRACES / "trace_starved.json.gz")
    with_gain = [f for f in report.findings if f.impact is not None]
    assert with_gain and with_gain == report.findings[: len(with_gain)]
    assert [f.impact for f in with_gain] == sorted((f.impact for f in with_gain), reverse=True)
    assert all("trace_starved.json.gz" in f.verify for f in report.findings if f.id.startswith("trace."))


def test_each_command_has_its_own_verification() -> None:
    f = Finding(id="pcie.link_width_degraded", severity=Severity.warn, step=5, symptom="", cause="", decision="")
    assert command_for(f, Context("check")) == "gputriage check"
    run = Context("run", workload=["python", "train.py", "--lr", "1e-3"], run_id=12)
    assert command_for(f, run) == (
        "gputriage baseline save before 12 && gputriage run --baseline before -- python train.py --lr 1e-3"
    )
    assert (
        command_for(f, Context("run", workload=["python", "a b.py"], baseline="v1"))
        == "gputriage run --baseline v1 -- python 'a b.py'"
    )
    load = Finding(id="load.queueing", severity=Severity.warn, step=2, symptom="", cause="", decision="")
    assert (
        command_for(load, Context("load", load_args=["http://h:8000", "--slo", "ttft=500ms"]))
        == "gputriage load http://h:8000 --slo ttft=500ms"
    )


def test_findings_without_an_estimate_keep_triage_order() -> None:
    a = Finding(id="b.x", severity=Severity.warn, step=2, symptom="", cause="", decision="")
    b = Finding(id="a.x", severity=Severity.critical, step=5, symptom="", cause="", decision="")
    c = Finding(id="c.x", severity=Severity.info, step=4, symptom="", cause="", decision="", impact=0.2)
    assert triage_order([b, a, c]) == [c, a, b]
