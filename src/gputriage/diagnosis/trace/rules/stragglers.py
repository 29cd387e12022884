"""Some ranks are slower than the others: in a synchronous job every rank waits for the slowest."""

from __future__ import annotations

from typing import Union

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.trace.base import TRACE
from gputriage.diagnosis.trace.evidence import RanksEvidence
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording
from gputriage.model.numbers import median
from gputriage.model.trace import RankRow

STRAGGLER = Threshold(
    "straggler_pct", 10.0, "% over the median", "a rank this much slower than the median rank", "judgement"
)


def slower_than_median(rows: list[RankRow], basis: str) -> list[Union[int, str]]:
    """The ranks (their number, or their file) whose `basis` (median step or window) is `straggler_pct` or more over
    the median rank's."""
    values = [getattr(x, basis) for x in rows if getattr(x, basis)]
    med = median(values) if values else 0
    return [
        x.rank if x.rank is not None else x.file
        for x in rows
        if med and getattr(x, basis) and 100 * (getattr(x, basis) - med) / med >= STRAGGLER.value
    ]


def evaluate(ev: RanksEvidence) -> list[Finding]:
    compared = ev.compared
    if not compared.stragglers:
        return []
    evidence = {
        "stragglers": compared.stragglers,
        "compared_on": compared.compared_on,
        "per_rank": {
            str(x.rank if x.rank is not None else x.file): getattr(x, compared.compared_on) for x in compared.per_rank
        },
    }
    many = len(compared.stragglers) > 1
    return [
        RULE.finding(
            evidence,
            subject="ranks",
            say="many" if many else "one",
            fill={"stragglers": ", ".join(map(str, compared.stragglers))},
        )
    ]


RULE = Rule(
    FindingSpec(
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
        condition="a rank's median step (or window) >= {straggler_pct:g}% over the median rank's",
        thresholds=(STRAGGLER,),
        says={
            "one": Wording(symptom="Rank {stragglers} is >= {straggler_pct:.0f}% slower than the median"),
            "many": Wording(symptom="Ranks {stragglers} are >= {straggler_pct:.0f}% slower than the median"),
        },
    ),
    evaluate,
)
