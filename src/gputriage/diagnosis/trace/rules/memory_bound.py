"""Elementwise and reduction kernels take the window: each unfused op moves whole tensors through device memory. A
chain of them over tensors beyond any L2 warns where it is the verdict."""

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.trace.base import FINDING_MIN, TRACE, verdict_words
from gputriage.diagnosis.trace.evidence import RankEvidence
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording
from gputriage.trace import kernel_kinds as kk
from gputriage.trace.analyze import LARGE_TENSOR_BYTES

CHAIN_MIN_KERNELS = Threshold(
    "chain_min_kernels",
    3,
    "kernels",
    "distinct elementwise kernels over tensors beyond any L2 that fusion would collapse",
    "judgement",
)
SYMPTOM = "Elementwise and reduction kernels take {elementwise_pct}% of the window"
CAUSE = "Each unfused op reads and writes whole tensors from device memory"


def evaluate(ev: RankEvidence) -> list[Finding]:
    share = ev.busy_pct(kk.ELEMENTWISE)
    if share < FINDING_MIN.value:
        return []
    size, kernels = ev.analysis.elementwise_median_bytes, ev.analysis.elementwise_large_kernels
    chain = size >= LARGE_TENSOR_BYTES and kernels >= CHAIN_MIN_KERNELS.value
    return [
        RULE.finding(
            {"elementwise_pct": share, "median_bytes_per_op": int(size), "distinct_elementwise_kernels": kernels},
            subject=ev.subject,
            severity=Severity.warn if chain and ev.verdict.bottleneck == B.memory_bound else Severity.info,
            say="sized" if size else "default",
            fill={"elementwise_pct": share, "median_mib_per_op": size / 2**20},
        )
    ]


RULE = Rule(
    FindingSpec(
        id="trace.memory_bound",
        **verdict_words(B.memory_bound),
        severity=Severity.info,
        commands=TRACE,
        condition="elementwise and reduction kernels >= {finding_min_pct:g}% of the window (warn when a chain of "
        "such kernels over large tensors is the verdict)",
        thresholds=(FINDING_MIN, CHAIN_MIN_KERNELS),
        needs=("trace",),
        says={
            "default": Wording(symptom=SYMPTOM, cause=CAUSE),
            "sized": Wording(
                symptom=SYMPTOM,
                cause=CAUSE + ": time goes to moving bytes, not math (median {median_mib_per_op:.0f} MiB per op)",
            ),
        },
    ),
    evaluate,
)
