"""The knee of a sweep: where more load stops paying. With SLOs, the highest load that meets them; without,
the lightest load whose output tokens/s is within 10% of the sweep's peak — read from the steps served cleanly
(a step whose requests failed ends the reading), and none when throughput still rises at the last step."""

from __future__ import annotations

from typing import Optional

from gputriage.diagnosis.serving.steps import failed, load_name
from gputriage.diagnosis.serving.steps import load_x as _x
from gputriage.model.finding import Threshold
from gputriage.model.load import Knee, LoadStep, Slo

NEAR_PEAK = Threshold(
    "knee_near_peak",
    0.9,
    "of the peak",
    "output tokens/s from which a step counts as the sweep's plateau: the knee is the lightest load at or above it",
    "judgement",
)


def _at(s: LoadStep, by: str, why: str) -> Knee:
    return Knee(concurrency=s.concurrency, rate_per_s=s.rate_per_s, by=by, why=why)


def _by_slo(ordered: list[LoadStep], slo: Slo, failing: Optional[LoadStep]) -> Knee:
    meeting = [s for s in ordered if s.meets_slo]
    if not meeting:
        return Knee(by="slo", why="no step met the SLOs, the lightest load included")
    best = meeting[-1]
    after = next((s for s in ordered if _x(s) > _x(best)), None)
    why = f"the highest load whose p{slo.percentile} latencies met the SLOs"
    if after is not None and after is failing:
        why += f"; requests failed from {load_name(after)}"
    elif after is not None:
        why += "; the next step did not"
    return _at(best, "slo", why)


def knee(steps: list[LoadStep], slo: Optional[Slo]) -> Optional[Knee]:
    """The sweep's knee (a Knee without a load: none within the sweep, and why); None when no step ran a
    request. Control steps do not count."""
    ordered = sorted((s for s in steps if s.requests and not s.control), key=_x)
    if not ordered:
        return None
    failing = next((s for s in ordered if failed(s)), None)
    if slo is not None:
        return _by_slo(ordered, slo, failing)
    clean = [s for s in ordered if failing is None or _x(s) < _x(failing)]
    failed_from = f"requests failed from {load_name(failing)}" if failing is not None else ""
    if not clean:
        return Knee(by="errors", why=f"{failed_from}: no load was served cleanly")
    peak = max(clean, key=lambda s: s.output_tokens_per_s)
    first = next(s for s in clean if s.output_tokens_per_s >= NEAR_PEAK.value * peak.output_tokens_per_s)
    if first is clean[-1]:
        if failing is not None:
            return Knee(
                by="errors",
                why=f"{failed_from}"
                + (f", while throughput still rose at {load_name(first)}" if len(clean) > 1 else ""),
            )
        if len(clean) == 1:
            return Knee(by="none", why=f"one step ({load_name(first)}): a knee needs a sweep")
        return Knee(by="none", why=f"throughput still rising at {load_name(first)}")
    why = (
        f"output tokens/s within {100 - 100 * NEAR_PEAK.value:.0f}% of the sweep's peak "
        f"({peak.output_tokens_per_s:,.0f} at {load_name(peak)}) from here: more load adds latency, not "
        "throughput"
    )
    low = min((s for s in clean if _x(s) > _x(peak)), key=lambda s: s.output_tokens_per_s, default=None)
    if low is not None and low.output_tokens_per_s < NEAR_PEAK.value * peak.output_tokens_per_s:
        why = (
            f"output tokens/s peaked at {peak.output_tokens_per_s:,.0f} ({load_name(peak)}) and fell to "
            f"{low.output_tokens_per_s:,.0f} at {load_name(low)}: more load cost throughput"
        )
    return _at(first, "saturation", why + (f"; {failed_from}" if failing is not None else ""))
