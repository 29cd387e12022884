"""The GPU underfilled at the lightest load: mostly idle, and the next step's throughput nearly doubles with it."""

from __future__ import annotations

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.serving.evidence import LOAD, LoadEvidence, activity_pct
from gputriage.diagnosis.serving.steps import load_name
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold

UNDERFILLED_ACTIVE = Threshold(
    "sm_active_pct",
    40.0,
    "%",
    "SM activity (GPU-Util without GPM) at the lightest load under which the GPU has room for a bigger batch",
    "judgement",
)
SCALING = Threshold(
    "throughput_scaling",
    1.6,
    "x",
    "output tokens/s gained by doubling the load: near 2, each request in flight adds work the GPU had room for",
    "judgement",
)


def evaluate(ev: LoadEvidence) -> list[Finding]:
    if not ev.asked[1:]:  # a gain needs a second step
        return []
    a, b = ev.asked[0], ev.asked[1]
    act = activity_pct(a)
    if act is None or act >= UNDERFILLED_ACTIVE.value or a.output_tokens_per_s <= 0:
        return []
    gain = b.output_tokens_per_s / a.output_tokens_per_s
    if gain < SCALING.value:
        return []
    evidence = {
        "at": load_name(a),
        "activity_pct": act,
        "next": load_name(b),
        "output_tokens_per_s": [a.output_tokens_per_s, b.output_tokens_per_s],
        "gain": round(gain, 2),
    }
    return [RULE.finding(evidence)]


RULE = Rule(
    FindingSpec(
        id="load.gpu_underfilled",
        step=1,
        severity=Severity.info,
        commands=LOAD,
        needs=("gpu",),
        thresholds=(UNDERFILLED_ACTIVE, SCALING),
        symptom="At low concurrency the GPU is mostly idle: throughput doubles with the load",
        cause="Decoding one or a few sequences reads all the weights per token for little math: the GPU waits on "
        "memory and launches, and has room for a bigger batch at almost no latency cost",
        decision="Serve more requests at once (batch more: continuous batching, a higher concurrency per replica) "
        "before adding GPUs; fewer, fuller replicas cost less per token",
        condition="SM activity (GPU-Util) below {sm_active_pct:g}% at the lightest load, and output tokens/s x >= "
        "{throughput_scaling:g} at the next step (the load doubled)",
    ),
    evaluate,
)
