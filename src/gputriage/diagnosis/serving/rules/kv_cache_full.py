"""The KV cache full under load: the server's own counters say it (usage at the top, sequences preempted)."""

from __future__ import annotations

from typing import Any

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.serving.evidence import LOAD, LoadEvidence
from gputriage.diagnosis.serving.steps import load_name
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording

KV_FULL = Threshold(
    "kv_cache_usage_pct",
    95.0,
    "%",
    "KV cache usage the server reported, at or above which new sequences wait or running ones are preempted",
    "judgement",
)


def evaluate(ev: LoadEvidence) -> list[Finding]:
    for s in ev.asked:
        sv = s.server
        if sv and ((sv.kv_cache_usage_max_pct or 0) >= KV_FULL.value or (sv.preemptions or 0) > 0):
            evidence: dict[str, Any] = {
                "at": load_name(s),
                "kv_cache_usage_max_pct": sv.kv_cache_usage_max_pct,
                "preemptions": sv.preemptions,
                "itl_p99_ms": s.itl.p99_ms,
                "itl_p50_ms": s.itl.p50_ms,
                "server": sv.source,
            }
            return [RULE.finding(evidence, say="from", fill={"at": load_name(s)})]
    return []


RULE = Rule(
    FindingSpec(
        id="load.kv_cache_full",
        step=3,
        severity=Severity.warn,
        commands=LOAD,
        needs=("server metrics",),
        symptom="The KV cache filled up under load",
        thresholds=(KV_FULL,),
        cause="Concurrent sequences x their context need more KV cache than the server reserved: new requests wait "
        "and running ones are preempted (recomputed or swapped), so latency spikes",
        decision="Cap concurrent sequences (vLLM --max-num-seqs), shorten the maximum context (--max-model-len), "
        "quantize the KV cache (--kv-cache-dtype fp8), or give the cache more GPU memory "
        "(--gpu-memory-utilization); beyond that, another replica",
        condition="KV cache usage >= {kv_cache_usage_pct:g}%, or preemptions counted, in a step",
        says={"from": Wording(symptom="The KV cache filled up from {at}")},
    ),
    evaluate,
)
