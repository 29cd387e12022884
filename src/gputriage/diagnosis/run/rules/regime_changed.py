"""The run changed regime part-way through: when, from what to what, and what the workload's own rate did (triage
step 2)."""

from __future__ import annotations

from typing import Any

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RUN, RunEvidence
from gputriage.diagnosis.run.regimes import MIN_REGIME_S, MIN_REGIME_WINDOWS, lasting
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording
from gputriage.model.run import Regime, Throughput

RATE_CHANGE = Threshold(
    "regime_rate_change_share",
    0.2,
    "of the rate before",
    "change of the workload's own rate (steps, samples or tokens per second) between two regimes "
    "reported with the change",
    "judgement: step rates of the recorded H200 loops vary by under 15% from run to run",
)
SAME_REGIME = Threshold(
    "regime_rate_match_s",
    1.0,
    "s",
    "how far the edges of a phase of the workload's throughput may lie from a regime's and still give its rate",
    "the throughput's phases are cut at the timeline's regimes (`throughput.by_regime`): their edges lie a 1 s "
    "window apart at most",
)


def evaluate(ev: RunEvidence) -> list[Finding]:
    """A finding for each regime of the lead GPU's timeline that follows a different one, both long enough to
    count (none for a command that failed before a steady state). What fixing it recovers: the share of the run
    after the change x the share of its rate the workload lost."""
    lead = ev.lead
    if lead is None or not ev.steady:
        return []
    return changes(lead.gpu, lead.timeline, ev.series(lead.gpu).window_s, ev.throughput, ev.watched)


def changes(
    gpu: int, timeline: list[Regime], window_s: float, throughput: Throughput | None = None, watched: bool = False
) -> list[Finding]:
    """A finding for each lasting regime of a GPU's timeline that follows a different one. `watched`: a `watch`,
    which follows a GPU, not a run."""
    regimes = lasting(timeline, window_s)
    return [
        _changed(gpu, before, after, throughput, watched)
        for before, after in zip(regimes, regimes[1:])
        if before.regime != after.regime
    ]


def _changed(gpu: int, before: Regime, after: Regime, throughput: Throughput | None, watched: bool) -> Finding:
    evidence: dict[str, Any] = {
        "at_s": after.start_s,
        "from": before.regime,
        "to": after.regime,
        "before_s": round(before.end_s - before.start_s, 1),
        "after_s": round(after.end_s - after.start_s, 1),
    }
    fill: dict[str, Any] = {"gpu": gpu, "at_s": after.start_s, "from": before.regime, "to": after.regime}
    fill["decision"] = after.decision or RULE.spec.decision  # the new regime's own, where it has one
    a, b = _rate(throughput, before), _rate(throughput, after)
    changed = False
    if a and b and a[0] == b[0] and a[1] > 0:
        change = b[1] / a[1] - 1.0
        evidence["rate_before"], evidence["rate_after"], evidence["rate_unit"] = a[1], b[1], a[0]
        fill |= {"rate_before": a[1], "rate_after": b[1], "rate_unit": a[0], "rate_change": change}
        changed = abs(change) >= RATE_CHANGE.value
    for name in ("util_pct", "sm_active_pct"):
        if name in before.evidence and name in after.evidence:
            evidence[f"{name}_before"], evidence[f"{name}_after"] = before.evidence[name], after.evidence[name]
    say = ("gpu" if watched else "run") + ("_rate" if changed else "")
    return RULE.finding(evidence, subject=f"gpu.{gpu}", say=say, fill=fill, impact=_lost(evidence))


def _lost(evidence: dict[str, Any]) -> float | None:
    """The share of the run after the change x the share of the workload's rate lost in it; None where it did not
    slow, or reported no rate."""
    before, after = evidence.get("rate_before"), evidence.get("rate_after")
    if not before or after is None:
        return None
    lost = 1.0 - float(after) / float(before)
    run_s = float(evidence["before_s"]) + float(evidence["after_s"])
    return max(0.0, lost) * float(evidence["after_s"]) / run_s if lost > 0 and run_s else None


def _rate(throughput: Throughput | None, r: Regime) -> tuple[str, float] | None:
    """The workload's rate over a regime: its tokens, samples or steps per second, else its metric's median."""
    if throughput is None:
        return None
    for p in throughput.by_regime:
        if abs(p.start_s - r.start_s) < SAME_REGIME.value and abs(p.end_s - r.end_s) < SAME_REGIME.value:
            for unit, value in (
                ("tokens/s", p.tokens_per_s),
                ("samples/s", p.samples_per_s),
                ("steps/s", p.steps_per_s),
                ("(metric)", p.metric_median),
            ):
                if value is not None:
                    return unit, value
    return None


CHANGED = {
    "run": "At +{at_s:.0f} s the run went from {from} to {to}",
    "gpu": "At +{at_s:.0f} s GPU {gpu} went from {from} to {to}",
}
RATE = "; the workload's rate went {rate_before:.4g} → {rate_after:.4g} {rate_unit} ({rate_change:+.0%})"
RULE = Rule(
    FindingSpec(
        id="run.regime_changed",
        step=2,
        severity=Severity.warn,
        commands=RUN,
        needs=("gpu",),
        symptom="The run changed regime part-way through",
        cause="Something changed while the job ran: a slower data shard or source, a neighbour on the GPU or the "
        "host, a thermal or power event, memory that crept up, a checkpoint that grew; the run's overall verdict "
        "hides it behind the dominant regime",
        decision="Look at what started at that moment (the data the job reached, other jobs, the GPU's clocks); "
        "each regime's own verdict and decision is in the timeline; `gputriage run --profile auto` profiles the new "
        "regime when it lasts",
        condition="a regime of >= {regime_min_s:g} s (and {regime_min_windows:g} windows) after the start-up that "
        "names another bottleneck than the regime before it",
        thresholds=(MIN_REGIME_S, MIN_REGIME_WINDOWS, RATE_CHANGE, SAME_REGIME),
        # the new regime's decision; a `watch` follows a GPU, not a run
        says={
            what + rate: Wording(symptom=CHANGED[what] + (RATE if rate else ""), decision="{decision}")
            for what in CHANGED
            for rate in ("", "_rate")
        },
    ),
    evaluate,
)
