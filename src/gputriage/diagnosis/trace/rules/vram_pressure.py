"""The GPU idles after the caching allocator returned memory to the driver and asked for it again."""

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.trace.base import FINDING_MIN, TRACE, verdict_words
from gputriage.diagnosis.trace.evidence import RankEvidence
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def evaluate(ev: RankEvidence) -> list[Finding]:
    idle_pct = ev.idle_pct("allocator")
    if idle_pct < FINDING_MIN.value:
        return []
    figures = {"allocator_idle_pct": idle_pct}
    return [RULE.finding(figures, subject=ev.subject, fill=figures, impact=idle_pct / 100)]


RULE = Rule(
    FindingSpec(
        id="trace.vram_pressure",
        **verdict_words(B.vram_pressure),
        severity=Severity.warn,
        commands=TRACE,
        condition="GPU idle after cudaMalloc/cudaFree >= {finding_min_pct:g}% of the window",
        thresholds=(FINDING_MIN,),
        needs=("trace",),
        says={
            "default": Wording(
                symptom="GPU idle {allocator_idle_pct}% of the window after cudaMalloc/cudaFree",
                cause="The caching allocator returns memory to the driver and asks for it again; cudaFree "
                "synchronizes the device",
            )
        },
    ),
    evaluate,
)
