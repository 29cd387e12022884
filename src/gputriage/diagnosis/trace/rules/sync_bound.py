"""The GPU idles after the host synchronized with it: the queue drained, the host had to issue work again."""

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.trace.base import FINDING_MIN, TRACE, verdict_words
from gputriage.diagnosis.trace.evidence import RankEvidence
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def evaluate(ev: RankEvidence) -> list[Finding]:
    idle_pct = ev.idle_pct("sync")
    if idle_pct < FINDING_MIN.value:
        return []
    top, calls = ev.window.syncs.by_op[:3], ev.window.syncs.count
    return [
        RULE.finding(
            {
                "sync_idle_pct": idle_pct,
                "sync_calls": calls,
                "by_op": [{"op": t.op, "calls": t.calls, "gpu_idle_after_us": t.gpu_idle_after_us} for t in top],
            },
            subject=ev.subject,
            fill={
                "sync_idle_pct": idle_pct,
                "sync_calls": calls,
                "s": "s" if calls != 1 else "",
                "top_ops": ", ".join(f"{t.op} ({t.calls}x)" for t in top),
            },
            impact=idle_pct / 100,
        )
    ]


RULE = Rule(
    FindingSpec(
        id="trace.sync_bound",
        **verdict_words(B.sync_bound),
        severity=Severity.warn,
        commands=TRACE,
        condition="GPU idle after host synchronizations >= {finding_min_pct:g}% of the window",
        thresholds=(FINDING_MIN,),
        needs=("trace",),
        says={
            "default": Wording(
                symptom="GPU idle {sync_idle_pct}% of the window after host synchronizations",
                cause="{sync_calls} synchronizing call{s} drained the GPU queue; the host then had to issue work "
                "again. Most from: {top_ops}",
            )
        },
    ),
    evaluate,
)
