"""The GPU idles while the host works outside framework ops: in the DataLoader (its own events cover the gaps: the
input was seen), or in host work no event names, in a window without loader events (Python, reading files,
preprocessing, sleeping: input by elimination, what is left once launches, syncs and host work in ops are counted)."""

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.trace.base import FINDING_MIN, TRACE, verdict_words
from gputriage.diagnosis.trace.evidence import RankEvidence
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def evaluate(ev: RankEvidence) -> list[Finding]:
    idle_pct = ev.idle_pct("host_outside_ops", "host_loading")
    if idle_pct < FINDING_MIN.value:
        return []
    loading_pct, unnamed_pct = ev.idle_pct("host_loading"), ev.idle_pct("host_outside_ops")
    figures = {"host_outside_ops_pct": idle_pct, "host_loading_pct": loading_pct, "host_unnamed_pct": unnamed_pct}
    say = "loading" if loading_pct > unnamed_pct else "default"
    return [RULE.finding(figures, subject=ev.subject, say=say, fill=figures, impact=idle_pct / 100)]


RULE = Rule(
    FindingSpec(
        id="trace.input_starved",
        **verdict_words(B.input_starved),
        severity=Severity.warn,
        commands=TRACE,
        condition="GPU idle while the host works outside framework ops (in the DataLoader, or in a window without "
        "loader events; not after reading a result back) >= {finding_min_pct:g}% of the window",
        thresholds=(FINDING_MIN,),
        needs=("trace",),
        says={
            "default": Wording(
                symptom="GPU idle {host_outside_ops_pct}% of the window while the host works outside framework ops",
                cause="Python, data loading, preprocessing or sleeping between the GPU's work: no DataLoader event "
                "covers the gaps, so input is named by elimination (the loop's own Python looks the same in a trace)",
            ),
            "loading": Wording(
                symptom="GPU idle {host_outside_ops_pct}% of the window while the host waits on the DataLoader "
                "({host_loading_pct}% in its own events)",
                cause="The DataLoader hands out batches slower than the GPU consumes them: fetching, collating or "
                "waiting for its workers",
            ),
        },
    ),
    evaluate,
)
