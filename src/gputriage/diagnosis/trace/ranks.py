"""A job of several ranks: its verdict from the ranks' averaged shares, and the ranks side by side."""

from __future__ import annotations

from typing import Callable

from gputriage.diagnosis.trace.rules.stragglers import slower_than_median
from gputriage.diagnosis.trace.verdict import decide, under_memory_roof
from gputriage.model.numbers import median
from gputriage.model.trace import Anatomy, MultiRank, RankAnalysis, RankRow, TimeShare, TraceVerdict


def job_verdict(judged: list[RankAnalysis]) -> TraceVerdict:
    """The verdict of a job of several ranks: the rules of `decide` applied to the ranks' shares of their windows
    averaged (each rank's window weighs the same), not to one rank's: in a synchronous job the cost every rank
    pays in turn (exposed communication, stragglers' waits) is what the job pays."""
    mains = [(r, a) for r in judged if (a := r.main()) is not None and a.window_us > 0]
    n = len(mains)
    window = sum(a.window_us for _, a in mains) / n

    def mean(us_of: Callable[[Anatomy], float]) -> float:
        return sum(us_of(a) * window / a.window_us for _, a in mains) / n

    def shares(field: str) -> dict[str, float]:  # busy or idle time by kind, averaged
        kinds = {k for _, a in mains for k in getattr(a, field)}
        return {
            k: sum(getattr(a, field)[k].us * window / a.window_us for _, a in mains if k in getattr(a, field)) / n
            for k in kinds
        }

    busy, idle = shares("busy"), shares("idle")
    roofs = [(a, under_memory_roof(r.kernels)) for r, a in mains]
    memory_roof = {
        k: sum(roof.get(k, 0.0) * window / a.window_us for a, roof in roofs) / n
        for k in {k for _, roof in roofs for k in roof}
    }
    busy_us, idle_us = sum(busy.values()), sum(idle.values())
    average = Anatomy(
        device=mains[0][1].device,
        window_us=window,
        busy_us=busy_us,
        idle_us=idle_us,
        busy_pct=100 * busy_us / window,
        underfilled_us=mean(lambda a: a.underfilled_us),
        busy={k: TimeShare(v, 100 * v / window) for k, v in busy.items()},
        idle={k: TimeShare(v, 100 * v / window) for k, v in idle.items()},
        kernels=round(sum(a.kernels for _, a in mains) / n),
        gaps=round(sum(a.gaps for _, a in mains) / n),
    )
    v = decide(average, complete=not any(r.truncated for r, _ in mains), memory_roof_us=memory_roof)
    v.device, v.basis = None, f"the {n} ranks' shares of their windows, averaged"
    return v


def report_verdict(ranks: list[RankAnalysis]) -> TraceVerdict:
    """The report's verdict: the one judged rank's, or the job's over several; how many ranks' own verdicts agree
    with it. An empty verdict where no rank was judged."""
    judged = [r for r in ranks if r.verdict is not None]
    if not judged:
        return TraceVerdict()
    lead = judged[0].verdict if len(judged) == 1 else job_verdict(judged)
    assert lead is not None
    agreeing = sum(1 for r in judged if r.verdict is not None and r.verdict.bottleneck == lead.bottleneck)
    return TraceVerdict(
        **{**{f: getattr(lead, f) for f in lead.__struct_fields__}, "ranks_agreeing": agreeing, "ranks": len(ranks)}
    )


def cross_rank(ranks: list[RankAnalysis]) -> MultiRank:
    """The ranks side by side: window, busy share, median step, verdict; the stragglers among them."""
    rows = []
    for r in ranks:
        a = r.main() or (r.anatomy[0] if r.anatomy else None)
        steps = [s.dur_us for s in a.steps] if a else []
        rows.append(
            RankRow(
                rank=r.rank,
                file=r.file,
                window_us=a.window_us if a else None,
                busy_pct=a.busy_pct if a else None,
                median_step_us=median(steps) if steps else None,
                bottleneck=r.verdict.bottleneck if r.verdict else None,
                comm_overlapped_pct=r.overlap.overlapped_pct if r.overlap else None,
            )
        )
    basis = "median_step_us" if all(x.median_step_us for x in rows) else "window_us"
    busy = [x.busy_pct for x in rows if x.busy_pct is not None]
    return MultiRank(
        per_rank=rows,
        compared_on=basis,
        stragglers=slower_than_median(rows, basis),
        busy_pct_spread=round(max(busy) - min(busy), 1) if busy else None,
    )
