"""The ranks' traces name different bottlenecks."""

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.trace.base import TRACE
from gputriage.diagnosis.trace.evidence import RanksEvidence
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: RanksEvidence) -> list[Finding]:
    verdicts = {
        str(r.rank if r.rank is not None else r.file): r.verdict.bottleneck.value
        for r in ev.judged
        if r.verdict is not None and r.verdict.bottleneck is not None
    }
    names = {r.verdict.bottleneck for r in ev.judged if r.verdict is not None}
    if len(names) <= 1:
        return []
    return [RULE.finding({"verdicts": verdicts}, subject="ranks")]


RULE = Rule(
    FindingSpec(
        id="trace.ranks_disagree",
        step=2,
        severity=Severity.info,
        commands=TRACE,
        needs=("trace", "ranks"),
        symptom="The ranks' traces name different bottlenecks",
        cause="The ranks do not do the same work, or one of them is held back by something the others are not",
        decision="Read each rank's verdict; fix the slowest rank's first, since the others wait for it",
        condition="the judged ranks' verdicts are not all the same",
    ),
    evaluate,
)
