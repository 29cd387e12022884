"""What the profiler cost a `run --profile`, on every GPU: GPU-Util while it traced (its window), while it held
the workload outside its window (starting — CUPTI initializes and drains the GPU's queue —, stopping, exporting),
and over the rest of the steady run; and in which regime of the run each profiled window was taken.

The times it held the workload are left out of the sampler's verdict (`gpu_verdict(exclude_s=...)`), whether a
trace came of them or not: a start that stalled the workload for seconds and wrote nothing (the workload ended
inside it, the export failed) is the profiler's, never the workload's steady state."""

from __future__ import annotations

from typing import Sequence

import msgspec

from gputriage.diagnosis.run.regimes import lasting
from gputriage.model.finding import Threshold
from gputriage.model.numbers import median, middle
from gputriage.model.recording import Recording
from gputriage.model.run import GpuVerdict, ProfilerEffect, ProfileReport, Regime

MIN_EFFECT_POINTS = Threshold(
    "profiler_effect_min_points",
    3.0,
    "readings",
    "GPU-Util readings a median needs on each side (while profiled, outside) to say what the profiler cost",
    "judgement: three readings are the fewest a median is taken over (one window's, where only windows are left)",
)


def _own_regime(rec: Recording, v: GpuVerdict, t_s: float, steady_from: float, steady_to: float) -> tuple[float, float]:
    """The steady span to compare a profiled moment with (unix s): in a run of several regimes, the regime it fell in
    (a window taken while the input was slow is not compared with the fast regimes around it); else the steady run."""
    assert rec.started_s is not None
    body = lasting(v.timeline, rec.windows.series[v.gpu].window_s)
    regime = regime_at(body, t_s - rec.started_s, inside=True)
    if regime is None or len(body) <= 1:
        return steady_from, steady_to
    return max(steady_from, rec.started_s + regime.start_s), min(steady_to, rec.started_s + regime.end_s)


def _points(rec: Recording, gpu: int, from_s: float) -> tuple[list[tuple[float, float | None]], bool]:
    """GPU-Util over time: from the samples when the ring still holds `from_s`, else each window by its middle."""
    if rec.recent and rec.recent[0].t_s <= from_s:
        return [(s.t_s, g.util_pct if (g := s.gpu(gpu)) else None) for s in rec.recent], True
    return [((w.t0_s + w.t1_s) / 2, w.util_pct) for w in rec.windows.series[gpu]], False


def profiler_effect(
    rec: Recording, gpu: int, v: GpuVerdict, window_s: list[float] | None, held_s: Sequence[Sequence[float]] = ()
) -> ProfilerEffect | None:
    """Median GPU-Util while the profiler ran and over the rest of the steady run (start-up and
    shut-down left out; in a run of several regimes, the rest of the window's regime), outside the time the
    profiler held the workload. From the samples when the
    ring still holds the profiled window, else from the windows; None with too few points."""
    if not window_s or rec.started_s is None or rec.ended_s is None:
        return None
    t0, t1 = window_s
    held = list(held_s) or [window_s]
    steady_from = rec.started_s + v.startup_s
    steady_to = rec.ended_s - v.shutdown_s
    points, from_samples = _points(rec, gpu, t0)
    if t1 <= steady_from:  # profiled before the steady run began: a warm-up, whatever its GPU-Util
        before = [u for t, u in points if u is not None and t0 <= t <= t1]
        steady = [u for t, u in points if u is not None and steady_from <= t <= steady_to]
        return ProfilerEffect(
            inside_pct=float(median(before)) if before else 0.0,
            outside_pct=float(median(steady)) if steady else 0.0,
            in_startup=True,
        )
    steady_from, steady_to = _own_regime(rec, v, (t0 + t1) / 2, steady_from, steady_to)
    inside, outside = [], []
    for t, util in points:
        if util is None or not steady_from <= t <= steady_to:
            continue
        if t0 <= t <= t1:
            inside.append(util)
        elif not any(h0 <= t <= h1 for h0, h1 in held):
            outside.append(util)
    if len(inside) < (MIN_EFFECT_POINTS.value if from_samples else 1) or len(outside) < MIN_EFFECT_POINTS.value:
        return None
    return ProfilerEffect(inside_pct=float(median(inside)), outside_pct=float(median(outside)))


def hold_effect(rec: Recording, gpu: int, v: GpuVerdict, held_s: Sequence[Sequence[float]]) -> ProfilerEffect | None:
    """Where no single window was traced (several windows, or the profiler's start or export failed, the workload
    ended inside its hold): GPU-Util while it held the workload against the rest of the steady run — with holds in
    several regimes, the hold that cost most against the rest of its own regime. None with too few points."""
    if not held_s or rec.started_s is None or rec.ended_s is None:
        return None
    points, from_samples = _points(rec, gpu, min(h[0] for h in held_s))
    groups: dict[tuple[float, float], list[Sequence[float]]] = {}  # the holds by the span of their own regime
    for h in held_s:
        span = _own_regime(rec, v, (h[0] + h[1]) / 2, rec.started_s + v.startup_s, rec.ended_s - v.shutdown_s)
        groups.setdefault(span, []).append(h)
    worst: ProfilerEffect | None = None
    for (lo, hi), holds in groups.items():
        inside = [u for t, u in points if u is not None and any(h0 <= t <= h1 for h0, h1 in holds)]
        outside = [
            u for t, u in points if u is not None and lo <= t <= hi and not any(h0 <= t <= h1 for h0, h1 in held_s)
        ]
        if len(inside) < (MIN_EFFECT_POINTS.value if from_samples else 1) or len(outside) < MIN_EFFECT_POINTS.value:
            continue
        pct = float(median(inside))
        effect = ProfilerEffect(inside_pct=pct, outside_pct=float(median(outside)), held_pct=pct)
        if worst is None or effect.outside_pct - effect.inside_pct > worst.outside_pct - worst.inside_pct:
            worst = effect
    return worst


def with_hold(
    rec: Recording,
    gpu: int,
    v: GpuVerdict,
    effect: ProfilerEffect,
    window_s: list[float] | None,
    held_s: Sequence[Sequence[float]],
) -> ProfilerEffect:
    """The effect with the GPU, the seconds held in all, and GPU-Util while held outside the window."""
    held_pct = effect.held_pct
    if window_s and held_s and rec.started_s is not None and rec.ended_s is not None:
        points, _ = _points(rec, gpu, min(h[0] for h in held_s))
        t0, t1 = window_s
        lo, hi = _own_regime(rec, v, (t0 + t1) / 2, rec.started_s, rec.ended_s)  # holds in the window's regime
        around = [
            u
            for t, u in points
            if u is not None
            and not t0 <= t <= t1
            and any(h0 <= t <= h1 and lo <= middle(h0, h1) <= hi for h0, h1 in held_s)
        ]
        held_pct = float(median(around)) if around else held_pct
    return msgspec.structs.replace(
        effect, gpu=gpu, held_pct=held_pct, held_s=round(sum(max(0.0, h[1] - h[0]) for h in held_s), 2)
    )


def profiler_costs(
    rec: Recording, verdicts: dict[int, GpuVerdict], profile: ProfileReport, held_s: Sequence[Sequence[float]]
) -> dict[str, ProfilerEffect]:
    """What the profiler cost each GPU the workload used (none where too few points tell)."""
    out: dict[str, ProfilerEffect] = {}
    for i, v in verdicts.items():
        effect = (
            profiler_effect(rec, i, v, profile.window_s, held_s) if profile.window_s else hold_effect(rec, i, v, held_s)
        )
        if effect is not None:
            out[str(i)] = with_hold(rec, i, v, effect, profile.window_s, held_s)
    return out


def regime_at(timeline: Sequence[Regime], t_s: float, inside: bool = False) -> Regime | None:
    """The phase of a timeline (seconds since the run started) a moment fell in, or else the last one before it (a
    profiled window's own seconds are left out of the timeline; `inside`: None there)."""
    before = [r for r in timeline if r.start_s <= t_s]
    within = [r for r in before if t_s <= r.end_s]
    found = within or ([] if inside else before)
    return found[-1] if found else None


def place_windows(profile: ProfileReport, timeline: Sequence[Regime], started_s: float | None) -> None:
    """Each profiled window's regime (of the lead GPU's timeline)."""
    if started_s is None:
        return
    for w in profile.windows:
        at = w.window_s or w.held_s
        if at:
            r = regime_at(timeline, (at[0] + at[1]) / 2 - started_s)
            w.regime = r.regime if r is not None else None
