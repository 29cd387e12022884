"""Communication that no computation overlaps adds directly to the step time."""

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.trace.base import FINDING_MIN, TRACE, verdict_words
from gputriage.diagnosis.trace.evidence import RankEvidence
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording
from gputriage.trace import kernel_kinds as kk

SYMPTOM = "Communication that no computation overlaps takes {exposed_comm_pct}% of the window"


def evaluate(ev: RankEvidence) -> list[Finding]:
    exposed = ev.busy_pct(kk.COMM)
    if exposed < FINDING_MIN.value:
        return []
    overlapped = ev.analysis.overlap.overlapped_pct if ev.analysis.overlap else None
    figures = {"exposed_comm_pct": exposed, "comm_overlapped_pct": overlapped}
    return [
        RULE.finding(
            figures,
            subject=ev.subject,
            say="default" if overlapped is None else "overlapped",
            fill=figures,
            impact=exposed / 100,
        )
    ]


RULE = Rule(
    FindingSpec(
        id="trace.comm_bound",
        **verdict_words(B.comm_bound),
        severity=Severity.warn,
        commands=TRACE,
        condition="communication no computation overlaps >= {finding_min_pct:g}% of the window",
        thresholds=(FINDING_MIN,),
        needs=("trace",),
        says={
            "default": Wording(symptom=SYMPTOM),
            "overlapped": Wording(symptom=SYMPTOM + " ({comm_overlapped_pct:.0f}% of communication time overlaps)"),
        },
    ),
    evaluate,
)
