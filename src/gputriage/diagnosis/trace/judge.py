"""Judge analyzed traces (one per rank): each rank's verdict and findings, the job's verdict from the ranks'
averaged shares, then across ranks the stragglers and whether the ranks agree."""

from __future__ import annotations

from typing import Callable

import msgspec

from gputriage.diagnosis.trace.findings import findings as findings_of
from gputriage.diagnosis.trace.specs import TRACE
from gputriage.diagnosis.trace.verdict import IDLE_TO, decide, too_little, under_memory_roof
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold
from gputriage.model.numbers import median
from gputriage.model.specs import by_name
from gputriage.model.trace import Anatomy, MultiRank, RankAnalysis, RankRow, TimeShare, TraceReport, TraceVerdict

STRAGGLER = Threshold(
    "straggler_pct", 10.0, "% over the median", "a rank this much slower than the median rank", "judgement"
)
STRAGGLERS = FindingSpec(
    id="trace.stragglers",
    step=2,
    severity=Severity.warn,
    commands=TRACE,
    needs=("trace", "ranks"),
    symptom="Some ranks are slower than the others",
    cause="In a synchronous job every rank waits for the slowest at each collective: one slow GPU, host or link "
    "sets the pace of all",
    decision="Compare the slow ranks' GPUs and hosts (`gputriage check` on each: clocks, throttling, PCIe link, "
    "other processes, data loading) and balance the data each rank gets",
    condition=f"a rank's median step (or window) >= {STRAGGLER.value:g}% over the median rank's",
    thresholds=(STRAGGLER,),
)
RANKS_DISAGREE = FindingSpec(
    id="trace.ranks_disagree",
    step=2,
    severity=Severity.info,
    commands=TRACE,
    needs=("trace", "ranks"),
    symptom="The ranks' traces name different bottlenecks",
    cause="The ranks do not do the same work, or one of them is held back by something the others are not",
    decision="Read each rank's verdict; fix the slowest rank's first, since the others wait for it",
    condition="the judged ranks' verdicts are not all the same",
)
SPECS = (STRAGGLERS, RANKS_DISAGREE)


def judge_rank(r: RankAnalysis) -> list[Finding]:
    """Set the rank's verdict (None when its window is too thin to judge); its findings."""
    a = r.main()
    if a is None:
        return []
    if a.busy_us <= 0 or a.window_us <= 0:
        r.problems.append("no span of the trace holds both the host's and the GPU's record: nothing to judge")
        return []
    if too_little(a):
        r.problems.append(
            f"little GPU activity to judge from: a {a.window_us / 1000:.1f} ms window with "
            f"{a.kernels} kernel{'s' if a.kernels != 1 else ''} (the verdict says how sure it is; "
            "profile the steady state for longer)"
        )
    r.verdict = v = decide(a, complete=not r.truncated, memory_roof_us=under_memory_roof(r.kernels))
    found = findings_of(r, v, by_name(r.spec) if r.spec else None)
    if v.tentative and v.bottleneck is not None:  # the verdict's own finding says it is a guess
        lead, why = f"trace.{v.bottleneck.value}", tentative_why(a, v)
        found = [
            msgspec.structs.replace(f, symptom=f"{f.symptom} (tentative: {why})") if f.id == lead else f for f in found
        ]
    return found


def tentative_why(a: Anatomy, v: TraceVerdict) -> str:
    """Why a verdict is only a guess, in a few words."""
    kernels = f"{a.kernels} kernel{'s' if a.kernels != 1 else ''}, {a.busy_us / 1000:.1f} ms busy"
    window = f"in a {a.window_us / 1000:.1f} ms window"
    if too_little(a):
        work = f"too little GPU work to judge: {kernels} {window}"
    elif v.bottleneck in IDLE_TO.values():
        work = f"only {a.gaps} idle gap{'s' if a.gaps != 1 else ''} {window}"
    else:
        work = f"a thin window: {kernels} {window}"
    return f"{work}; confidence {v.confidence:.2f}"


def judge(files: list[str], ranks: list[RankAnalysis], problems: list[str]) -> TraceReport:
    found: list[Finding] = []
    for r in ranks:
        found += judge_rank(r)
    report = TraceReport(files=files, ranks=ranks, problems=problems, findings=found)
    judged = [r for r in ranks if r.verdict is not None]
    if judged:
        lead = judged[0].verdict if len(judged) == 1 else job_verdict(judged)
        assert lead is not None
        agreeing = sum(1 for r in judged if r.verdict is not None and r.verdict.bottleneck == lead.bottleneck)
        report.verdict = TraceVerdict(
            **{**{f: getattr(lead, f) for f in lead.__struct_fields__}, "ranks_agreeing": agreeing, "ranks": len(ranks)}
        )
    if len(ranks) > 1:
        report.multi_rank = mr = cross_rank(ranks)
        if mr.stragglers:
            report.findings.append(
                STRAGGLERS.finding(
                    {
                        "stragglers": mr.stragglers,
                        "compared_on": mr.compared_on,
                        "per_rank": {
                            str(x.rank if x.rank is not None else x.file): getattr(x, mr.compared_on)
                            for x in mr.per_rank
                        },
                    },
                    subject="ranks",
                    symptom=f"Rank{'s' if len(mr.stragglers) > 1 else ''} {', '.join(map(str, mr.stragglers))} "
                    f"{'are' if len(mr.stragglers) > 1 else 'is'} >= {STRAGGLER.value:.0f}% slower than the "
                    "median",
                )
            )
        names = {r.verdict.bottleneck for r in judged if r.verdict is not None}
        if len(names) > 1:
            report.findings.append(
                RANKS_DISAGREE.finding(
                    {
                        "verdicts": {
                            str(r.rank if r.rank is not None else r.file): r.verdict.bottleneck.value
                            for r in judged
                            if r.verdict is not None and r.verdict.bottleneck is not None
                        }
                    },
                    subject="ranks",
                )
            )
    return report


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


def cross_rank(ranks: list[RankAnalysis]) -> MultiRank:
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
    values = [getattr(x, basis) for x in rows if getattr(x, basis)]
    med = median(values) if values else 0
    stragglers = [
        x.rank if x.rank is not None else x.file
        for x in rows
        if med and getattr(x, basis) and 100 * (getattr(x, basis) - med) / med >= STRAGGLER.value
    ]
    busy = [x.busy_pct for x in rows if x.busy_pct is not None]
    return MultiRank(
        per_rank=rows,
        compared_on=basis,
        stragglers=stragglers,
        busy_pct_spread=round(max(busy) - min(busy), 1) if busy else None,
    )
