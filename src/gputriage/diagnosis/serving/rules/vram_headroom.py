"""VRAM without headroom at the peak of a step."""

from __future__ import annotations

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.serving.evidence import LOAD, LoadEvidence
from gputriage.diagnosis.serving.steps import load_name
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold

VRAM_FULL = Threshold("vram_used_share", 0.95, "of total", "VRAM in use at the peak of the load", "judgement")


def evaluate(ev: LoadEvidence) -> list[Finding]:
    for s in ev.asked:
        for g in s.gpus:
            if g.used_max_bytes and g.total_bytes and g.used_max_bytes >= VRAM_FULL.value * g.total_bytes:
                evidence = {
                    "at": load_name(s),
                    "gpu": g.gpu,
                    "used_gib": round(g.used_max_bytes / 2**30, 1),
                    "total_gib": round(g.total_bytes / 2**30, 1),
                }
                return [RULE.finding(evidence, subject=f"gpu.{g.gpu}")]
    return []


RULE = Rule(
    FindingSpec(
        id="load.vram_headroom",
        step=3,
        severity=Severity.warn,
        commands=LOAD,
        needs=("gpu",),
        thresholds=(VRAM_FULL,),
        symptom="VRAM has almost no headroom at peak load",
        cause="The weights, the KV cache and activations fill the GPU: a longer prompt or one more sequence is an "
        "out-of-memory error or a preemption",
        decision="Leave headroom (a lower --gpu-memory-utilization, a request cap), quantize weights or KV cache, or "
        "move to a larger GPU; test at the peak prompt lengths you serve",
        condition="VRAM used at the peak of any step >= {vram_used_share:.0%} of its total",
    ),
    evaluate,
)
