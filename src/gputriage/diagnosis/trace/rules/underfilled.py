"""Most of a busy window goes to kernels too small for the GPU: busy by nvidia-smi, most SMs idle."""

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.trace.base import TRACE, verdict_words
from gputriage.diagnosis.trace.evidence import RankEvidence
from gputriage.diagnosis.trace.verdict import UNDERFILLED_BUSY
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording

MIN_BUSY = Threshold(
    "underfilled_min_busy_pct",
    50.0,
    "% of the window",
    "busy time a window needs for its small kernels to be a finding (a GPU that mostly idles waits on the host, "
    "whatever the size of its kernels)",
    "judgement",
)


def evaluate(ev: RankEvidence) -> list[Finding]:
    a = ev.window
    if a.busy_us < MIN_BUSY.value / 100 * (a.window_us or 1.0):
        return []
    share = round(100 * a.underfilled_us / a.busy_us, 1)
    if 100 * a.underfilled_us / a.busy_us < UNDERFILLED_BUSY.value:
        return []
    return [
        RULE.finding(
            {"underfilled_busy_pct": share, "median_kernel_us": a.median_kernel_us},
            subject=ev.subject,
            fill={"share_pct": share},
        )
    ]


RULE = Rule(
    FindingSpec(
        id="trace.underfilled",
        **verdict_words(B.underfilled),
        severity=Severity.warn,
        commands=TRACE,
        condition="busy >= {underfilled_min_busy_pct:g}% of the window, and >= {underfilled_busy_pct:g}% of busy "
        "time in kernels whose blocks cover under half the SMs",
        thresholds=(MIN_BUSY, UNDERFILLED_BUSY),
        needs=("trace",),
        says={
            "default": Wording(
                symptom="{share_pct:.0f}% of GPU busy time is in kernels whose blocks cover under half the SMs",
                cause="Kernels too small for the GPU: busy by nvidia-smi, most SMs idle",
            )
        },
    ),
    evaluate,
)
