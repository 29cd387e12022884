"""Long prompts' prefill stalling the decoding sequences: ITL while a long prompt is prefilled, against the rest."""

from __future__ import annotations

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.serving.evidence import LOAD, LoadEvidence
from gputriage.diagnosis.serving.stats import MIN_ITL_SAMPLES
from gputriage.diagnosis.serving.steps import load_name
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold

PREFILL_ITL = Threshold(
    "itl_long_prompt_ratio",
    2.0,
    "x",
    "mean ITL while a long prompt's prefill runs against the rest of the time",
    "judgement",
)


def evaluate(ev: LoadEvidence) -> list[Finding]:
    hit = [s for s in ev.asked if (s.itl_long_prompt_ratio or 0) >= PREFILL_ITL.value]
    if not hit:
        return []
    s = max(hit, key=lambda x: x.itl_long_prompt_ratio or 0)
    evidence = {
        "at": load_name(s),
        "itl_long_prompt_ratio": s.itl_long_prompt_ratio,
        "itl_p50_ms": s.itl.p50_ms,
        "itl_p99_ms": s.itl.p99_ms,
    }
    return [RULE.finding(evidence)]


RULE = Rule(
    FindingSpec(
        id="load.prefill_interference",
        step=2,
        severity=Severity.warn,
        commands=LOAD,
        thresholds=(PREFILL_ITL, MIN_ITL_SAMPLES),
        symptom="Long prompts stall everyone else's tokens: inter-token latency spikes while they are prefilled",
        cause="A long prompt's prefill runs in the same batch steps as the decoding sequences, which wait for it",
        decision="Enable chunked prefill (vLLM --enable-chunked-prefill, a smaller --max-num-batched-tokens), cap "
        "prompt length, or separate prefill and decode (disaggregated serving)",
        condition="mean ITL while a long prompt is in prefill >= {itl_long_prompt_ratio:g}x the mean ITL otherwise "
        "(at least {itl_samples_min:g} intervals on each side)",
    ),
    evaluate,
)
