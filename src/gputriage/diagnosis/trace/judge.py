"""Judge analyzed traces (one per rank): each rank's verdict and the findings of its window, the job's verdict from
the ranks' averaged shares, then the findings of the ranks side by side (stragglers, ranks that disagree); last,
what every judge does to its findings (`finish`: impact, verifying command, triage order).

The rules are the modules of `trace.rules`; each reads one rank's window (`RankEvidence`) or the job's ranks
(`RanksEvidence`), as the parameter of its `evaluate` declares (`evidence.reads`)."""

from __future__ import annotations

from typing import Any

from gputriage.diagnosis.finish import finish
from gputriage.diagnosis.rule import Rule, evaluate_all, rules_of
from gputriage.diagnosis.trace import tentative
from gputriage.diagnosis.trace.evidence import RankEvidence, RanksEvidence, reads
from gputriage.diagnosis.trace.ranks import cross_rank, report_verdict
from gputriage.diagnosis.trace.verdict import decide, too_little, under_memory_roof
from gputriage.diagnosis.verify import Context
from gputriage.model.finding import Finding
from gputriage.model.specs import by_name
from gputriage.model.trace import RankAnalysis, TraceReport


def rules_reading(evidence: type) -> list[Rule[Any]]:
    """The trace rules that read this kind of evidence."""
    return [rule for rule in rules_of("trace") if reads(rule) is evidence]


def judge(
    files: list[str], ranks: list[RankAnalysis], problems: list[str], context: Context | None = None
) -> TraceReport:
    """The report of the traces `files` (their analyses `ranks`; `problems`: the files that could not be read).
    `context`: what the verifying commands are made of (default: the trace files; `run --profile` gives its own)."""
    found: list[Finding] = []
    for r in ranks:
        found += judge_rank(r)
    report = TraceReport(files=files, ranks=ranks, problems=problems, verdict=report_verdict(ranks))
    if len(ranks) > 1:
        report.multi_rank = cross_rank(ranks)
        found += evaluate_all(rules_reading(RanksEvidence), RanksEvidence(ranks, report.multi_rank))
    report.findings = finish(found, context or Context("trace", trace_files=files))
    return report


def judge_rank(r: RankAnalysis) -> list[Finding]:
    """Set the rank's verdict (None when its window is too thin to judge); the findings of its window."""
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
    evidence = RankEvidence(r, a, v, by_name(r.spec) if r.spec else None)
    return tentative.marked(evaluate_all(rules_reading(RankEvidence), evidence), a, v)
