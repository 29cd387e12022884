"""The GPU idles while the host works outside framework ops: Python, data loading, preprocessing, sleep."""

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.trace.base import FINDING_MIN, TRACE, verdict_words
from gputriage.diagnosis.trace.evidence import RankEvidence
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def evaluate(ev: RankEvidence) -> list[Finding]:
    idle_pct = ev.idle_pct("host_outside_ops")
    if idle_pct < FINDING_MIN.value:
        return []
    figures = {"host_outside_ops_pct": idle_pct}
    return [RULE.finding(figures, subject=ev.subject, fill=figures, impact=idle_pct / 100)]


RULE = Rule(
    FindingSpec(
        id="trace.input_starved",
        **verdict_words(B.input_starved),
        severity=Severity.warn,
        commands=TRACE,
        condition="GPU idle while the host works outside framework ops (not after reading a result back) >= "
        "{finding_min_pct:g}% of the window",
        thresholds=(FINDING_MIN,),
        needs=("trace",),
        says={
            "default": Wording(
                symptom="GPU idle {host_outside_ops_pct}% of the window while the host works outside framework ops",
                cause="Python, data loading, preprocessing or sleeping between the GPU's work",
            )
        },
    ),
    evaluate,
)
