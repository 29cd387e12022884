"""What long prompts cost every request's tokens: a step of the mix against its control (the same step, every
prompt at the normal length)."""

from __future__ import annotations

from typing import Optional

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.serving.evidence import LOAD, LoadEvidence
from gputriage.diagnosis.serving.steps import load_name
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording
from gputriage.model.load import LoadStep

LONG_COST = Threshold(
    "tpot_control_ratio",
    1.5,
    "x",
    "TPOT p50 with the long prompts against the same step with every prompt at the normal length (its control)",
    "judgement",
)


def evaluate(ev: LoadEvidence) -> list[Finding]:
    worst: Optional[tuple[float, LoadStep, LoadStep]] = None
    for mix, control in zip(ev.steps, ev.steps[1:]):  # a control runs right after the step it repeats
        a, b = mix.tpot.p50_ms, control.tpot.p50_ms
        if control.control and not mix.control and a and b and (worst is None or a / b > worst[0]):
            worst = (a / b, mix, control)
    if worst is None or worst[0] < LONG_COST.value:
        return []
    ratio, mix, control = worst
    evidence = {
        "at": load_name(mix),
        "tpot_p50_ms": [mix.tpot.p50_ms, control.tpot.p50_ms],
        "tpot_control_ratio": round(ratio, 2),
        "output_tokens_per_s": [mix.output_tokens_per_s, control.output_tokens_per_s],
        "itl_long_prompt_ratio": mix.itl_long_prompt_ratio,
    }
    fill = {"ratio": ratio, "at": load_name(mix), "tpot_ms": mix.tpot.p50_ms, "control_tpot_ms": control.tpot.p50_ms}
    return [RULE.finding(evidence, say="slower", fill=fill)]


RULE = Rule(
    FindingSpec(
        id="load.long_prompts_slow_decode",
        step=2,
        severity=Severity.warn,
        commands=LOAD,
        thresholds=(LONG_COST,),
        symptom="Long prompts make every request's tokens slower",
        cause="The long prompts' prefill and their long KV caches share the batch steps with the short requests: "
        "every step does more work, so every request's tokens wait; an attention kernel that pads the batch to "
        "its longest sequence pays for one long prompt on every sequence (the ITL while a long prompt is "
        "prefilled, against the rest, says how much is the prefill)",
        decision="Enable chunked prefill (vLLM --enable-chunked-prefill, a smaller --max-num-batched-tokens), route "
        "long prompts to replicas of their own, cap the context (--max-model-len), and set the SLO by the "
        "prompt mix you serve",
        condition="TPOT p50 of a step with the long prompts >= {tpot_control_ratio:g}x its control's (the same "
        "step, every prompt at the normal length)",
        says={
            "slower": Wording(
                symptom="Long prompts make every request's tokens {ratio:.1f}x slower at {at}: TPOT "
                "{control_tpot_ms:,.1f} → {tpot_ms:,.1f} ms against the same requests at one length"
            )
        },
    ),
    evaluate,
)
