"""One GPU's verdict over a run: the label of each window (`diagnosis.run.classify`), the regimes they
form, and the dominant bottleneck of the steady state with its share, confidence and evidence (its words:
`diagnosis.run.verdict_words`).

The steady state lies between the start-up (until the window in which the GPU first computes;
for a run that never computes, until its memory first grows; for a workload that reports its steps
through `gputriage.step()`, not before its first reported step) and the shut-down (after the window
in which it last computed): imports, model building, warm-up steps and kernel loading before the
work, saving and joining workers after it, are not the workload's bottleneck.
"""

from __future__ import annotations

from typing import Sequence

from gputriage.diagnosis.run.classify import computes, elimination_evidence, label
from gputriage.diagnosis.run.evidence import window_evidence
from gputriage.diagnosis.run.host_side import stack_shares, waits_for_input
from gputriage.diagnosis.run.regimes import BLIP_WINDOWS, describe_regimes
from gputriage.diagnosis.run.verdict_words import decision_of, describe
from gputriage.inworkload.stack_categories import COMPILE
from gputriage.model.bottleneck import HOST_BOUND
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Threshold
from gputriage.model.run import GpuStatic, GpuVerdict, Regime, Series
from gputriage.model.window import WindowMetrics, Windows

WORKLOAD_VRAM = Threshold(
    "workload_vram_bytes",
    256 * 2**20,
    "bytes",
    "memory growth over the first window's that says a workload holds the GPU (its start-up, before it computes)",
    "judgement",
)
ALTERNATIVE_SHARE = Threshold(
    "alternative_share",
    0.1,
    "of the dominant label's windows",
    "windows of the dominant label in which another label stayed possible for the verdict to leave it open",
    "judgement: a tenth, so that a window at a change of regime (half in the one before) does not",
)
UNDECIDED_CONFIDENCE = Threshold(
    "undecided_confidence_factor",
    0.6,
    "ratio",
    "what a verdict's confidence is multiplied by where it leaves another cause open",
    "judgement: an undecided verdict is never read as a sure one",
)
STEPS_STOPPED = Threshold(
    "steps_stopped_intervals",
    3.0,
    "mean step intervals",
    "time without a reported step after which a loop that reports its steps has stopped (its shut-down begins)",
    "judgement",
)
STEPS_FOR_INTERVAL = Threshold(
    "steps_for_interval",
    2.0,
    "steps",
    "steps reported after the first one for their mean interval to tell that the loop stopped",
    "judgement: an interval needs two steps at least",
)
COMPILING_OVERLAP = Threshold(
    "compiling_phase_overlap",
    0.5,
    "of the window",
    "the share of a window in which the main thread mostly compiled that lies in a phase for the phase to be "
    "compiling (not a warm-up)",
    "judgement: most of it",
)


def holds_workload_memory(used_max_bytes: float | None, base_bytes: float | None) -> bool:
    """The GPU holds WORKLOAD_VRAM more than at `base_bytes` (the first window's): the workload's memory."""
    return (used_max_bytes or 0.0) > (base_bytes or 0.0) + WORKLOAD_VRAM.value


EDGES = ("start-up", "shut-down")


def last_step_s(steps_total: Sequence[float | None], t1_s: Sequence[float]) -> float | None:
    """When a workload that reports its steps reported its last: the end of the window its count reached its
    total in (None: it reports none). Columns of the windows: their step counts and ends."""
    done = max((x or 0.0 for x in steps_total), default=0.0)
    if done <= 0:
        return None
    return next(t for x, t in zip(steps_total, t1_s) if (x or 0.0) >= done)


def steady_bounds(ws: Sequence[WindowMetrics], last_step: float | None = None) -> tuple[int | None, int | None]:
    """(index of the window in which the GPU first computed — or, if it never did, in which its memory
    first grew with the workload's; for a workload that reports its steps, of its first step —, index of
    the last window in which it computed — for a workload that reports its steps, the last that began before
    its last step (`last_step`, when windows were left out of `ws`)); None when none."""
    first = next((i for i, w in enumerate(ws) if computes(w.util_max_pct, w.sm_active_max_pct)), None)
    last = next((i for i in range(len(ws) - 1, -1, -1) if computes(ws[i].util_max_pct, ws[i].sm_active_max_pct)), None)
    if first is None and ws:
        first = next(
            (
                i
                for i, w in enumerate(ws)
                if holds_workload_memory(w.used_max_bytes, ws[0].used_bytes) and w.workload_vram_max_bytes
            ),
            None,
        )
    # a workload that reports its steps starts its work with the first one: before it, warm-up; after it, work
    # even while the GPU barely computes (a loop that recompiles at every step, a service answering slow requests
    # with kernels too short for GPU-Util to count); it ends with its last one: after it, the workload prints,
    # saves and exits, whatever blip the GPU shows as its context goes
    stepped = next((i for i, w in enumerate(ws) if (w.steps_total or 0) > 0), None)
    counts = [w.steps_total for w in ws]
    ended = last_step if last_step is not None else last_step_s(counts, [w.t1_s for w in ws])
    if first is None or stepped is None or (last is None and ended is None):
        return first, last
    if last is not None and stepped > last and ended is None:
        return first, last
    first = stepped
    before_end = max((i for i, w in enumerate(ws) if ended is not None and w.t0_s < ended), default=None)
    last = max(x for x in (last, before_end, stepped) if x is not None)
    # only a loop that stopped stepping: not one that reports a step an epoch, still at work after its last
    steps = max(x or 0.0 for x in counts) - (counts[stepped] or 0.0)
    if (
        ended is not None
        and before_end is not None
        and steps >= STEPS_FOR_INTERVAL.value
        and ws[last].t1_s - ended > STEPS_STOPPED.value * (ended - ws[stepped].t0_s) / steps
    ):
        last = min(last, before_end)
    return first, last


def answering_requests(ws: Sequence[WindowMetrics], labelled: list[tuple[B, list[B]]]) -> list[tuple[B, list[B]]]:
    """Idle windows in which the workload still reported steps while its main thread waited for input from outside
    most of the time (the stack sampler): a service between requests whose kernels are too short for GPU-Util to
    count. The GPU waits for input at the input rate (input_starved), it is not left idle."""
    out = list(labelled)
    for i in range(1, len(ws)):
        before, now = ws[i - 1].steps_total, ws[i].steps_total
        if out[i][0] != B.idle or before is None or now is None or now <= before:
            continue
        shares = stack_shares(ws[i])
        if shares is not None and waits_for_input(shares):
            out[i] = (B.input_starved, [])  # the stacks tell it: nothing left open
    return out


def regimes(
    ws: Sequence[WindowMetrics], labels: Sequence[B], t0: float, start: int | None, end: int | None, window_s: float
) -> list[Regime]:
    """Consecutive windows of one label, start-up and shut-down apart; one-window blips folded into the one before."""
    out: list[Regime] = []
    blip_s = BLIP_WINDOWS * window_s
    if start is not None and ws[start].t0_s > t0:
        out.append(Regime(0.0, ws[start].t0_s - t0, "start-up"))
    for i, (w, lab) in enumerate(zip(ws, labels)):
        if start is not None and i < start:
            continue
        if end is not None and i > end:
            out.append(Regime(w.t0_s - t0, ws[-1].t1_s - t0, "shut-down"))
            break
        if out and out[-1].regime == lab.value:
            out[-1].end_s = w.t1_s - t0
        else:
            out.append(Regime(w.t0_s - t0, w.t1_s - t0, lab.value))
    merged: list[Regime] = []
    for r in out:
        if merged and r.end_s - r.start_s < blip_s and r.regime not in EDGES and merged[-1].regime not in EDGES:
            merged[-1].end_s = r.end_s
            continue
        if merged and merged[-1].regime == r.regime:
            merged[-1].end_s = r.end_s
            continue
        merged.append(r)
    return [Regime(round(r.start_s, 1), round(r.end_s, 1), r.regime) for r in merged]


def _mark_warmup(timeline: list[Regime], dominant: str, compiling: Sequence[tuple[float, float]] = ()) -> list[Regime]:
    """The phases between start-up and the first phase of the dominant regime, when shorter together
    than the dominant regime's time after them, are one warm-up: kernels loading, caches filling,
    allocator growing; not a bottleneck of the workload. Not from a phase on in which the main thread
    mostly compiled (`compiling`): recompilations after the first step are the workload's cost."""
    body = [i for i, r in enumerate(timeline) if r.regime not in EDGES]
    first_dominant = next((i for i in body if timeline[i].regime == dominant), None)
    before = [i for i in body if first_dominant is not None and i < first_dominant]
    kept = next((k for k, i in enumerate(before) if any(_overlap(timeline[i], c) for c in compiling)), None)
    before = before[:kept] if kept is not None else before
    if not before or first_dominant is None:
        return timeline
    lead = sum(timeline[i].end_s - timeline[i].start_s for i in before)
    after = sum(r.end_s - r.start_s for r in timeline[first_dominant:] if r.regime == dominant)
    if lead >= after:
        return timeline
    warm = Regime(timeline[before[0]].start_s, timeline[before[-1]].end_s, "warm-up")
    return timeline[: before[0]] + [warm] + timeline[before[-1] + 1 :]


def _overlap(phase: Regime, window: tuple[float, float]) -> bool:
    """Most of `window` (seconds since the run started) lies in `phase`."""
    w0, w1 = window
    return min(phase.end_s, w1) - max(phase.start_s, w0) > COMPILING_OVERLAP.value * (w1 - w0)


def compiling_spans(ws: Sequence[WindowMetrics], t0: float) -> list[tuple[float, float]]:
    """The windows (seconds since the run started) in which the main thread spent most of its time compiling
    (torch.compile, the stack sampler)."""
    out = []
    for w in ws:
        shares = stack_shares(w)
        if shares and max(shares, key=lambda c: shares[c]) == COMPILE:
            out.append((w.t0_s - t0, w.t1_s - t0))
    return out


def _series(ws: Sequence[WindowMetrics], t0: float, power_limit_mw: int | None = None, points: int = 720) -> Series:
    """Per-window GPU-Util, SM activity, tensor pipes, DRAM, power (% of the limit), SM clock and the
    workload's CPU, squeezed to at most `points` points by taking maxima (the clock: minima); a figure the GPU
    does not give is left empty."""
    n = len(ws)
    step = max(1, -(-n // points))
    limit_w = power_limit_mw / 1000 if power_limit_mw else None
    picks = {
        "util_pct": lambda w: w.util_pct,
        "sm_active_pct": lambda w: w.sm_active_pct,
        "tensor_active_pct": lambda w: w.tensor_active_pct,
        "dram_active_pct": lambda w: w.dram_active_pct,
        "power_pct": lambda w: 100 * w.power_w / limit_w if w.power_w is not None and limit_w else None,
        "sm_clock_mhz": lambda w: w.sm_clock_mhz,
        "workload_cpu_pct": lambda w: w.workload_cpu_pct,
    }
    t: list[float] = []
    cols: dict[str, list[float | None]] = {k: [] for k in picks}
    for i in range(0, n, step):
        chunk = ws[i : i + step]
        t.append(round(chunk[0].t0_s - t0, 1))
        for k, pick in picks.items():
            vals = [v for v in (pick(w) for w in chunk) if v is not None]
            cols[k].append(round((min if k == "sm_clock_mhz" else max)(vals), 1) if vals else None)
    return Series(t_s=t, **{k: (v if any(x is not None for x in v) else []) for k, v in cols.items()})


def gpu_verdict(
    series: Windows,
    gpu: GpuStatic,
    run_start_s: float,
    run_end_s: float,
    exclude_s: Sequence[Sequence[float]] = (),
    observed: bool = False,
) -> GpuVerdict:
    """The dominant bottleneck of one GPU's steady state. Windows that overlap `exclude_s` (the time a
    profiler held the workload) are left out. `observed`: the GPU was watched, not a workload run (`watch`): no
    start-up, warm-up or shut-down of a workload to leave out, every window counts."""
    ws = [w for w in series if all(w.t1_s < a or w.t0_s > b for a, b in exclude_s)]
    start, end = (
        (0, len(ws) - 1)
        if observed and ws
        else steady_bounds(ws, last_step_s(series.column("steps_total"), series.ends_s))
    )
    labelled = answering_requests(ws, [label(w, gpu) for w in ws])
    labels = [lab for lab, _ in labelled]
    startup_s = ws[start].t0_s - run_start_s if start is not None else 0.0
    shutdown_s = run_end_s - ws[end].t1_s if end is not None else 0.0
    steady = [
        i for i in range(len(ws)) if (start is None or i > start or (i == start == 0)) and (end is None or i <= end)
    ] or list(range(len(ws)))
    timeline = regimes(ws, labels, run_start_s, start, end, series.window_s)
    verdict = GpuVerdict(
        gpu=series.gpu if series.gpu is not None else -1,
        startup_s=round(max(0.0, startup_s), 1),
        shutdown_s=round(max(0.0, shutdown_s), 1),
        timeline=timeline,
        series=_series(ws, run_start_s, gpu.power_limit_mw),
    )
    if not steady:
        verdict.summary = "too few samples to judge"
        return verdict
    counts: dict[B, float] = {}
    for i in steady:
        counts[labels[i]] = counts.get(labels[i], 0.0) + (ws[i].duration_s or series.window_s)
    total = sum(counts.values())
    dominant = max(counts, key=lambda k: counts[k])
    chosen = [ws[i] for i in steady if labels[i] == dominant]
    # what the counters could not rule out in a tenth of the dominant windows or more (not a window at a change of
    # regime, half in the one before)
    seen = [a for i in steady if labels[i] == dominant for a in set(labelled[i][1])]
    alternatives = sorted(
        {a for a in seen if seen.count(a) >= ALTERNATIVE_SHARE.value * len(chosen)}, key=lambda b: b.value
    )
    share = counts[dominant] / total
    evidence = window_evidence(chosen)
    if dominant in HOST_BOUND:
        evidence.update(elimination_evidence(chosen, gpu))
    if "power_w" in evidence and gpu.power_limit_mw:
        evidence["power_pct_of_limit"] = round(100_000.0 * evidence["power_w"] / gpu.power_limit_mw, 1)
    verdict.bottleneck = dominant
    verdict.share = round(share, 2)
    verdict.confidence = round(share * (UNDECIDED_CONFIDENCE.value if alternatives else 1.0), 2)
    verdict.summary = f"{describe(dominant, evidence)}: {dominant.value}"
    verdict.decision = decision_of(dominant, evidence)
    verdict.evidence = evidence
    verdict.undecided_between = [dominant, *alternatives] if alternatives else []
    verdict.steady_s = round(total, 1)
    verdict.timeline = describe_regimes(
        timeline if observed else _mark_warmup(timeline, dominant.value, compiling_spans(ws, run_start_s)),
        ws,
        run_start_s,
        series.window_s,
        describe,
        decision_of,
    )
    verdict.shares = {k.value: round(v / total, 2) for k, v in sorted(counts.items(), key=lambda kv: -kv[1])}
    return verdict
