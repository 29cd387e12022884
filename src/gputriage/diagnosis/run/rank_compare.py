"""The ranks of a distributed job side by side (`run` of a launcher, `gputriage join` of several nodes): a row per
rank over the steady state, and the rank the others wait for.

In a synchronous job every rank's step lasts as long as the slowest rank's: the others wait for it in the next
collective. What tells a rank apart is its time outside collective waits (`own`): its step time less the share its
main thread waited in collectives (where steps are unknown, or the ranks make steps `straggler_steps_ratio` apart,
that share alone). The job's steady state is cut into
rounds (`round_s`); in a round, a rank whose own time is `straggler_score` times the best rank's or more, while the
best rank waited `straggler_min_wait` of its time or more, held the others back. Slow in `straggler_chronic_share` of
the rounds or more: a chronic straggler; else, slow by `straggler_stall_score` in a round: one-off stalls. The score
said is its own time per step against the best rank's, over the steady state."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from gputriage.inworkload.rank_clock import BINS_PER_OCTAVE
from gputriage.inworkload.stack_categories import COLLECTIVE_WAIT
from gputriage.model.finding import Threshold
from gputriage.model.numbers import median
from gputriage.model.ranks import (
    RankGpu,
    RankLine,
    RankSeries,
    RanksReport,
    RankSummary,
    RankWindow,
    Straggler,
    merge_windows,
)
from gputriage.model.sample import HangEvent

SOURCE = "the 2-rank gloo jobs of examples/distributed recorded on 2 loaded CPU cores (tests/fixtures/ranks/)"
ROUND = Threshold(
    "round_s", 2.0, "s", "the rounds a job's steady state is cut into to compare its ranks", f"judgement; {SOURCE}"
)
STRAGGLER_SCORE = Threshold(
    "straggler_score",
    1.3,
    "x the best rank's",
    "a rank's time outside collective waits, against the best rank's, from which it holds the others back in a round",
    f"{SOURCE}: a rank sleeping 50 ms in its loader scores 2 and more; healthy ranks 1.0-1.2 under load",
)
MIN_WAIT = Threshold(
    "straggler_min_wait",
    0.15,
    "share of the best rank's time",
    "the time the best rank waits in collectives in a round, under which no rank holds it back",
    f"judgement: what a straggler costs the job; {SOURCE}",
)
# what every straggler rule's condition starts with (a rank named a straggler), its thresholds' values as fields
STRAGGLING = (
    "a rank's time outside collective waits is >= {straggler_score:g}x the best rank's while the best waits >= "
    "{straggler_min_wait:.0%} of its time"
)
CHRONIC = Threshold(
    "straggler_chronic_share",
    0.5,
    "share of the rounds",
    "the rounds a rank holds the others back in, from which it is a chronic straggler (else one-off stalls)",
    "judgement: most of the steady state",
)
STALL = Threshold(
    "straggler_stall_score",
    2.0,
    "x the best rank's",
    "a rank's time outside collective waits against the best rank's in one round, from which a one-off stall is said",
    f"judgement: twice the best rank's time, beyond the noise of loaded cores ({SOURCE})",
)
MIN_ROUNDS = Threshold(
    "straggler_min_rounds", 3.0, "rounds", "steady rounds a job needs to compare its ranks", "judgement"
)
SAME_STEPS = Threshold(
    "straggler_steps_ratio",
    1.5,
    "x",
    "how many more steps one rank makes than another over the steady state for the ranks not to run the same loop "
    "(pipeline stages, a rank that evaluates): their time per step is then not compared, their shares are",
    "judgement: the ranks of a data-parallel job make the same steps",
)
SERIES_KEPT = Threshold(
    "rank_series_kept",
    240.0,
    "windows",
    "a rank's windows a report keeps (neighbours merged beyond): what `gputriage join` compares again",
    "judgement: a few kB a rank in the report; 4 min of 1 s windows, an hour of 15 s ones",
)
LINES_KEPT = Threshold("rank_lines_kept", 8.0, "lines", "a rank's main-thread lines its row keeps", "judgement")


@dataclass
class _Round:
    samples: float = 0.0
    collective: float = 0.0  # samples x share
    steps: float = 0.0
    counted: bool = False  # the rank reports steps


# the shares of a rank's time spent waiting for the other ranks: its host in a collective (the stack sampler's); a
# GPU-side wait (its GPU in a collective's kernels while its host waits behind it) is one more key of a window's shares
WAITS_FOR_PEERS = (COLLECTIVE_WAIT,)


def waiting(shares: dict[str, float]) -> float:
    """A rank's share of its time waiting for the other ranks."""
    return min(1.0, sum(shares.get(k, 0.0) for k in WAITS_FOR_PEERS))


def bin_s(i: int) -> float:
    """The duration a step histogram's bin stands for (its geometric middle)."""
    return 2 ** ((i + 0.5) / BINS_PER_OCTAVE) / 1000.0


def quantile_s(hist: dict[str, float], q: float) -> float | None:
    """The duration under which a share `q` of the steps fell."""
    total = sum(hist.values())
    if total <= 0:
        return None
    seen = 0.0
    for i in sorted(int(k) for k in hist):
        seen += hist[str(i)]
        if seen >= q * total:
            return bin_s(i)
    return None


def steady_span(series: list[RankSeries]) -> tuple[float, float] | None:
    """The span every rank was in its loop: from the last rank's first window with a step (the first window of the
    last to start, where steps are unknown) to the first rank's last such window, its first and last windows left out
    (the rendezvous, the shutdown)."""
    spans = []
    for s in series:
        ws = s.windows[1:-1]
        stepped = [w for w in ws if w.steps] if s.step_source else ws
        if not stepped:
            return None
        spans.append((stepped[0].t0_s, stepped[-1].t1_s))
    t0, t1 = max(a for a, _ in spans), min(b for _, b in spans)
    return (t0, t1) if t1 > t0 else None


def _mid(w: RankWindow) -> float:
    return (w.t0_s + w.t1_s) / 2


def _steady(s: RankSeries, t0: float, t1: float) -> list[RankWindow]:
    return [w for w in s.windows if t0 <= _mid(w) <= t1]


def steady_lines(s: RankSeries, t0: float) -> list[RankLine]:
    """A rank's main thread's top lines from `t0` (unix s) on: its last counts less those it had then (the line
    counts carried last at or before `t0`); a report's series, which carries no counts, its own lines."""
    if not s.snapshots:
        return s.lines
    before = [c for t, c in s.snapshots if t <= t0]
    a, b = before[-1] if before else s.snapshots[0][1], s.snapshots[-1][1]
    ticks = b.ticks - a.ticks
    if ticks <= 0 or not b.lines:
        return []
    base = {(x.file, x.line, x.function, x.category): x.main for x in a.lines or []}
    grown = [(x, x.main - base.get((x.file, x.line, x.function, x.category), 0.0)) for x in b.lines]
    top = sorted((g for g in grown if g[1] > 0), key=lambda g: -g[1])[: int(LINES_KEPT.value)]
    return [
        RankLine(file=x.file, line=x.line, function=x.function, category=x.category, share=n / ticks) for x, n in top
    ]


def summary(s: RankSeries, ws: list[RankWindow], gpu: RankGpu | None, t0: float) -> RankSummary:
    """A rank's row over its steady windows (from `t0`, unix s)."""
    n = sum(w.samples for w in ws)
    keys = {k for w in ws for k in w.shares}
    shares = {k: round(sum(w.shares.get(k, 0.0) * w.samples for w in ws) / n, 4) for k in keys} if n else {}
    hist: dict[str, float] = {}
    for w in ws:
        for k, v in w.step_hist.items():
            hist[k] = hist.get(k, 0.0) + v
    steps = sum(w.steps or 0.0 for w in ws) if s.step_source else None
    cpu = [w.cpu_pct for w in ws if w.cpu_pct is not None]
    med, p90 = quantile_s(hist, 0.5), quantile_s(hist, 0.9)
    return RankSummary(
        rank=s.rank,
        pid=s.pid,
        node=s.node,
        local_rank=s.local_rank,
        steps=steps,
        step_source=s.step_source,
        median_step_us=round(med * 1e6) if med else None,
        p90_step_us=round(p90 * 1e6) if p90 else None,
        shares=shares,
        windows=len(ws),
        cpu_pct=round(median(cpu), 1) if cpu else None,
        cores=s.cores,
        gpu=gpu,
        lines=steady_lines(s, t0),
    )


def same_steps(rows: list[RankSummary]) -> bool | None:
    """Whether the ranks made about the same steps (None: not every rank's are known)."""
    steps = [r.steps for r in rows if r.steps]
    if len(steps) != len(rows) or not steps:
        return None
    return max(steps) < SAME_STEPS.value * min(steps)


def own_time(row: RankSummary, by_steps: bool) -> float:
    """A rank's time outside collective waits: per step (µs) where every rank's steps are known, else its share."""
    outside = 1.0 - waiting(row.shares)
    return outside * (row.median_step_us or 0.0) if by_steps else outside


def _rounds(series: list[RankSeries], t0: float, t1: float) -> list[dict[int, _Round]]:
    """Each round of the steady span: each rank's samples, collective wait and steps in it."""
    n = max(1, int((t1 - t0) // ROUND.value))
    out: list[dict[int, _Round]] = [{} for _ in range(n)]
    for s in series:
        for w in _steady(s, t0, t1):
            i = min(n - 1, int((_mid(w) - t0) // ROUND.value))
            r = out[i].setdefault(s.rank, _Round(counted=bool(s.step_source)))
            r.samples += w.samples
            r.collective += waiting(w.shares) * w.samples
            r.steps += w.steps or 0.0
    return [r for r in out if len(r) == len(series) and all(x.samples > 0 for x in r.values())]


def round_scores(rounds: list[dict[int, _Round]], steps: bool) -> list[dict[int, float]]:
    """Each round where the best rank waited `straggler_min_wait` or more: each rank's own time against the best's
    (per step where `steps` and every rank's steps in the round are known)."""
    out: list[dict[int, float]] = []
    for r in rounds:
        by_steps = steps and all(x.counted and x.steps > 0 for x in r.values())
        own = {k: (1 - x.collective / x.samples) * (ROUND.value / x.steps if by_steps else 1.0) for k, x in r.items()}
        best = min(own, key=lambda k: own[k])
        if r[best].collective / r[best].samples < MIN_WAIT.value or own[best] <= 0:
            out.append({})
            continue
        out.append({k: v / own[best] for k, v in own.items()})
    return out


def straggler(rows: list[RankSummary], rounds: list[dict[int, float]], by_steps: bool) -> Straggler | None:
    """The rank that held the others back in the most rounds: chronic, or one-off stalls; None where none did."""
    slow = {r.rank: sum(1 for x in rounds if x.get(r.rank, 0.0) >= STRAGGLER_SCORE.value) for r in rows}
    stalls = {r.rank: sum(1 for x in rounds if x.get(r.rank, 0.0) >= STALL.value) for r in rows}
    for r in rows:
        r.slow_windows = slow[r.rank]
    if len(rounds) < MIN_ROUNDS.value or not any(slow.values()):
        return None
    own = {r.rank: own_time(r, by_steps) for r in rows}
    best = min(own, key=lambda k: own[k])
    top = max(rows, key=lambda r: (slow[r.rank], own[r.rank]))
    chronic = slow[top.rank] >= CHRONIC.value * len(rounds)
    if not chronic and not stalls[top.rank]:
        return None
    others = [waiting(r.shares) for r in rows if r.rank != top.rank]
    return Straggler(
        rank=top.rank,
        score=round(own[top.rank] / own[best], 2) if own[best] > 0 else 0.0,
        best_rank=best,
        chronic=chronic,
        slow_windows=slow[top.rank] if chronic else stalls[top.rank],
        windows=len(rounds),
        others_collective_wait_share=round(median(others), 3) if others else 0.0,
    )


def compact(s: RankSeries, kept: int = int(SERIES_KEPT.value)) -> RankSeries:
    """A rank's series with at most `kept` windows (neighbours merged), for the report."""
    ws = s.windows
    while len(ws) > kept:
        ws = [merge_windows(ws[i], ws[i + 1]) for i in range(0, len(ws) - 1, 2)] + ([ws[-1]] if len(ws) % 2 else [])
    return RankSeries(**{**{f: getattr(s, f) for f in s.__struct_fields__}, "windows": ws, "snapshots": []})


def compare(series: list[RankSeries], gpus: dict[int, RankGpu], hangs: list[HangEvent]) -> RanksReport | None:
    """The ranks side by side over their steady span, the straggler among them; None for a job of no rank."""
    if not series:
        return None
    span = steady_span(series)
    out = RanksReport(
        job_id=next((s.job_id for s in series if s.job_id), None),
        world_size=max((s.world_size or 0 for s in series), default=0) or None,
        nodes=sorted({s.node for s in series}),
        hangs=hangs,
    )
    if out.world_size and len(series) < out.world_size:
        out.notes.append(
            f"{len(series)} of the job's {out.world_size} ranks ran here: `gputriage join` of every node's record "
            "compares them all"
        )
    if span is None:
        out.notes.append("no steady span in which every rank was in its loop: the ranks were not compared")
        out.per_rank = [summary(s, s.windows, gpus.get(s.rank), 0.0) for s in series]
    else:
        out.per_rank = [summary(s, _steady(s, *span), gpus.get(s.rank), span[0]) for s in series]
    out.series = [compact(msgspec.structs.replace(s, lines=r.lines)) for s, r in zip(series, out.per_rank)]
    if span is None:
        return out
    rows = out.per_rank
    by_steps = bool(same_steps(rows)) and all(r.median_step_us for r in rows)
    own = {r.rank: own_time(r, by_steps) for r in rows}
    best = min(own.values())
    for r in rows:
        r.own_step_us = round(own[r.rank]) if by_steps else None
        r.score = round(own[r.rank] / best, 2) if best > 0 else None
    out.compared_on = "own_step_us" if by_steps else "own_share"
    if len(series) > 1:
        rounds = _rounds(series, *span)
        out.straggler = straggler(rows, round_scores(rounds, by_steps), by_steps)
        out.stragglers = [out.straggler.rank] if out.straggler else []
        if len(rounds) < MIN_ROUNDS.value:
            out.notes.append(
                f"the ranks were in their loop together {span[1] - span[0]:.0f} s: too short to name a straggler "
                f"({MIN_ROUNDS.value:.0f} rounds of {ROUND.value:g} s at least)"
            )
    return out
