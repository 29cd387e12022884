"""The workload's step rate fell part-way through, GPU or not: when, from what rate to what, and what changed at that
time on the host and the GPU (triage step 2). Its regimes are cut from the step rate itself (`step_regimes`)."""

from __future__ import annotations

from typing import Any

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RUN, RunEvidence
from gputriage.diagnosis.run.regimes import MIN_REGIME_S
from gputriage.diagnosis.run.rules.regime_changed import changes
from gputriage.diagnosis.run.step_changes import FIGURE_POINTS, FIGURE_SHARE, Changed, what_changed
from gputriage.diagnosis.run.step_regimes import STEP_RATE_NOISE, STEP_RATE_RATIO
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording
from gputriage.model.run import StepRegime

SAME_CHANGE = Threshold(
    "step_rate_same_change_windows",
    2.0,
    "windows",
    "how far apart a drop of the step rate and a change of the lead GPU's regime may lie and be one change (said "
    "once, by run.regime_changed, with the workload's rate)",
    "recorded H200 runs (tests/fixtures/h200/runs_regime_shift*.json.gz, runs_live_rerun.json.gz): the step rate's "
    "changes lie 0.2-1.2 s before the GPU timeline's (a reading of the counters against a window's label), at 1 s "
    "windows",
)


def evaluate(ev: RunEvidence) -> list[Finding]:
    """A finding for each step-rate regime slower than the one before it (none for a command that failed before a
    steady state, nor where the lead GPU's own change of regime said it with the rate)."""
    t = ev.throughput
    if t is None or not t.step_regimes[1:] or not ev.steady:
        return []
    said = _said_by_gpu(ev)
    window_s = ev.host.window_s
    out = []
    for before, after in zip(t.step_regimes, t.step_regimes[1:]):
        if after.steps_per_s >= before.steps_per_s:
            continue
        if any(abs(at - after.start_s) <= SAME_CHANGE.value * window_s for at in said):
            continue
        out.append(_fell(ev, before, after))
    return out


def _said_by_gpu(ev: RunEvidence) -> list[float]:
    """When the lead GPU changed regime and run.regime_changed gave the workload's rate with it."""
    lead = ev.lead
    if lead is None:
        return []
    found = changes(lead.gpu, lead.timeline, ev.series(lead.gpu).window_s, ev.throughput, ev.watched)
    return [float(f.evidence["at_s"]) for f in found if "rate_before" in f.evidence]


def _fell(ev: RunEvidence, before: StepRegime, after: StepRegime) -> Finding:
    lead = ev.lead
    gpu = ev.series(lead.gpu) if lead is not None else None
    changed = what_changed(ev.host, gpu, ev.started_s, before, after)
    change = after.steps_per_s / before.steps_per_s - 1.0
    evidence: dict[str, Any] = {
        "at_s": after.start_s,
        "rate_before": before.steps_per_s,
        "rate_after": after.steps_per_s,
        "rate_unit": "steps/s",
        "before_s": round(before.end_s - before.start_s, 1),
        "after_s": round(after.end_s - after.start_s, 1),
        **changed.evidence,
    }
    fill = {
        "at_s": after.start_s,
        "rate_before": before.steps_per_s,
        "rate_after": after.steps_per_s,
        "rate_change": change,
        "after_s": evidence["after_s"],
        "changed": changed.text,
    }
    work = _work_held(before, after)
    if work is not None:  # bigger steps, the same work a second: nothing lost
        unit, a, b = work
        evidence |= {"work_unit": unit, "work_before": a, "work_after": b}
        fill |= {"work_unit": unit, "work_after": b, "work_change": b / a - 1.0}
        return RULE.finding(evidence, subject="workload", severity=Severity.info, say="bigger_steps", fill=fill)
    run_s = evidence["before_s"] + evidence["after_s"]  # the rate lost, as a share of the GPU's time (none: no GPU)
    lost = -change * evidence["after_s"] / run_s if run_s and lead is not None else None
    return RULE.finding(evidence, subject="workload", say=_kind(changed), fill=fill, impact=lost)


def _work_held(before: StepRegime, after: StepRegime) -> tuple[str, float, float] | None:
    """(unit, before, after) of the tokens or samples a second the workload reported, where they held through the
    drop of its step rate (fell by less than STEP_RATE_RATIO): each step carries more of them. Else None."""
    for unit, a, b in (
        ("tokens/s", before.tokens_per_s, after.tokens_per_s),
        ("samples/s", before.samples_per_s, after.samples_per_s),
    ):
        if a and b:
            return (unit, a, b) if b * STEP_RATE_RATIO.value > a else None
    return None


def _kind(changed: Changed) -> str:
    """How the workload's CPU moved with its rate: it waits more (fell), each step costs more (held or rose)."""
    if changed.cpu_before is None or changed.cpu_after is None:
        return "default"
    return "waits" if changed.cpu_before - changed.cpu_after >= FIGURE_POINTS.value else "more_work"


FELL = (
    "At +{at_s:.0f} s the workload's step rate fell {rate_before:.4g} → {rate_after:.4g} steps/s ({rate_change:+.0%}) "
    "for the {after_s:.0f} s that followed"
)
RULE = Rule(
    FindingSpec(
        id="run.step_rate_changed",
        step=2,
        severity=Severity.warn,
        commands=RUN,
        needs=("workload", "gputriage.step"),
        symptom="The workload's step rate fell part-way through the run",
        cause="Something changed while the job ran: its inputs, the code path it runs, what it waits on, or the "
        "cores and GPU it gets; its overall rate hides the slow regime behind the fast one",
        decision="Look at what changed at that moment (the figures beside the finding; the data the job reached, other "
        "jobs on the host); on a GPU, `gputriage run --profile auto` profiles the slow regime",
        condition="two neighbouring stretches of the step rate, each >= {regime_min_s:g} s, the later slower by "
        "{step_rate_regime_ratio:g}x or more and by {step_rate_regime_noise:g} standard errors of their windows' "
        "rates; what changed at that time: a percentage moved by {step_rate_figure_points:g} points or more, a "
        "clock or a power by {step_rate_figure_share:.0%} or more; a note, not a warning, where the tokens or samples "
        "a second it reported fell by less than {step_rate_regime_ratio:g}x (bigger steps)",
        thresholds=(MIN_REGIME_S, STEP_RATE_RATIO, STEP_RATE_NOISE, FIGURE_POINTS, FIGURE_SHARE, SAME_CHANGE),
        says={
            "default": Wording(symptom=FELL, cause="At that time: {changed}"),
            "bigger_steps": Wording(
                symptom=FELL + "; its {work_unit} held ({work_after:.4g}, {work_change:+.0%})",
                cause="Each step carries more work (a bigger batch, more micro-batches accumulated, more samples or "
                "tokens a step): the rate of work held. At that time: {changed}",
                decision="Nothing was lost: read the throughput in {work_unit}, not steps; an alert on the step rate "
                "should follow it too",
            ),
            "more_work": Wording(
                symptom=FELL,
                cause="At that time: {changed}. Each step costs more work for the same CPU: larger inputs (longer "
                "sequences, bigger images or batches), another code path (an evaluation, a new phase of the "
                "schedule), a structure that grows with the run, or fewer cores for it",
                decision="Compare a step before +{at_s:.0f} s with one after (the sizes of its inputs, the code it "
                "runs); the main thread's busiest lines are in the report; on a GPU, `gputriage run --profile auto` "
                "profiles the slow regime",
            ),
            "waits": Wording(
                symptom=FELL,
                cause="At that time: {changed}. The workload works less and waits more: for its input (a slower data "
                "shard, storage, the network), a lock, the GPU, or cores another process took",
                decision="Find what it waits on after +{at_s:.0f} s: the main thread's stacks (the report's host "
                "lines), the input pipeline (`gputriage bench` for storage), the other processes on the host",
            ),
        },
    ),
    evaluate,
)
