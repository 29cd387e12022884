"""One sequence decoding near the memory-bandwidth ceiling: every token reads every weight once."""

from __future__ import annotations

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.serving.evidence import LOAD, LoadEvidence
from gputriage.diagnosis.serving.steps import load_name
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold

DECODE_CEILING = Threshold(
    "decode_ceiling_share",
    0.6,
    "of the ceiling",
    "one sequence's decode tokens/s against the memory bandwidth / weight bytes ceiling",
    "judgement",
)


def evaluate(ev: LoadEvidence) -> list[Finding]:
    steps, bandwidth_gbs, weight_bytes = ev.asked, ev.bandwidth_gbs, ev.weight_bytes
    if not steps or not bandwidth_gbs or not weight_bytes or not steps[0].tpot.p50_ms:
        return []
    ceiling = bandwidth_gbs * 1e9 / weight_bytes
    rate = 1000 / steps[0].tpot.p50_ms
    if rate < DECODE_CEILING.value * ceiling:
        return []
    evidence = {
        "at": load_name(steps[0]),
        "tokens_per_s_per_sequence": round(rate, 1),
        "ceiling_tokens_per_s": round(ceiling, 1),
        "bandwidth_gbs": bandwidth_gbs,
        "weight_gb": round(weight_bytes / 1e9, 2),
    }
    return [RULE.finding(evidence)]


RULE = Rule(
    FindingSpec(
        id="load.decode_memory_bound",
        step=2,
        severity=Severity.info,
        commands=LOAD,
        needs=("model size",),
        thresholds=(DECODE_CEILING,),
        symptom="One sequence decodes near the memory-bandwidth ceiling",
        cause="Each decoded token reads every weight once: tokens/s per sequence cannot exceed the measured memory "
        "bandwidth / the weights' bytes; only batching amortizes the read",
        decision="Batch more sequences per step, quantize the weights (fewer bytes per token), or use speculative "
        "decoding; a faster GPU helps only by its bandwidth",
        condition="1000 / TPOT p50 at the lightest load >= {decode_ceiling_share:g}x (bandwidth / weight bytes)",
    ),
    evaluate,
)
