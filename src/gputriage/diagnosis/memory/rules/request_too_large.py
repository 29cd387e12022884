"""One request larger than all the GPU could give (a tensor of a whole long sequence's logits, a batch too large)."""

from gputriage.diagnosis.memory.evidence import MEMORY, Evidence, oom_evidence, size
from gputriage.diagnosis.memory.thresholds import REQUEST_SHARE
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def evaluate(ev: Evidence) -> list[Finding]:
    if not ev.oom:
        return []
    never = ev.never_fits()
    if not never and (ev.grew() or ev.others_in_the_way() or not ev.one_huge_request()):
        return []
    usable = ev.usable or 0
    fill = {
        "requested": size(ev.requested),
        "where": ev.where(),
        "usable": size(usable),
        "capacity": size(ev.capacity),
        "share": ev.requested / usable if usable else 0.0,
    }
    return [
        RULE.finding(
            oom_evidence(ev),
            subject=f"gpu.{ev.state.device}",
            severity=Severity.critical,
            say="never" if never else "most",
            fill=fill,
        )
    ]


RULE = Rule(
    FindingSpec(
        id="memory.request_too_large",
        step=3,
        severity=Severity.critical,
        commands=MEMORY,
        needs=("allocator snapshot",),
        symptom="One allocation asked for more than the GPU could give",
        cause="A single tensor is the size of the GPU's memory: the logits of a whole long sequence (batch x length x "
        "vocabulary), a batch too large for one step, an attention matrix materialized whole",
        decision="Make that one tensor smaller at the line that asked: chunk it (compute the loss over slices of the "
        "sequence instead of materializing every logit, chunked or flash attention), or a smaller batch or sequence "
        "there; bf16 halves it",
        condition="at an out-of-memory error, the request is larger than what was free plus all this process held "
        "and the other processes' memory, or at least {request_share_min:.0%} of what was free plus all this "
        "process held (when no growth and no other process explain it)",
        thresholds=(REQUEST_SHARE,),
        says={
            "never": Wording(
                symptom="One allocation of {requested} at {where} is larger than all the GPU could ever give this "
                "process ({usable} free and held by it, {capacity} in all)",
            ),
            "most": Wording(
                symptom="One allocation of {requested} at {where} is {share:.0%} of all the GPU could give this "
                "process ({usable} free and held by it)",
            ),
        },
    ),
    evaluate,
)
