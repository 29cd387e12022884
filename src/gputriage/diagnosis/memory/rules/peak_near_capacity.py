"""The steady peak of live tensors reached the GPU's capacity: weights, optimizer state and activations at the
peak phase."""

from gputriage.diagnosis.memory.evidence import MEMORY, Evidence, lines_text, oom_evidence, size
from gputriage.diagnosis.memory.thresholds import PEAK_SHARE
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording

PHASE_WORDS = {
    "forward": "the forward pass (activations kept for backward)",
    "backward": "the backward pass (gradients beside the activations)",
    "optimizer_first_step": "the optimizer's first step (its state created: two fp32 copies per weight for Adam)",
    "optimizer": "the optimizer's step",
    "other": "outside a module's forward, backward or an optimizer",
}


def evaluate(ev: Evidence) -> list[Finding]:
    if not ev.oom or ev.never_fits() or ev.grew() or ev.others_in_the_way() or ev.one_huge_request():
        return []
    if ev.cache_in_pieces() or not ev.peak_at_capacity():
        return []
    s = ev.state
    usable = ev.usable or 1
    phase = s.oom.phase if s.oom is not None and s.oom.phase else "other"
    fill = {
        "live": size(ev.live),
        "requested": size(ev.requested),
        "share": (ev.live + ev.requested) / usable,
        "usable": size(usable),
        "phase": PHASE_WORDS.get(phase, phase),
        "lines": lines_text(s.top_lines),
        "where": ev.where(),
    }
    return [RULE.finding(oom_evidence(ev), subject=f"gpu.{s.device}", severity=Severity.critical, say="oom", fill=fill)]


RULE = Rule(
    FindingSpec(
        id="memory.peak_near_capacity",
        step=3,
        severity=Severity.critical,
        commands=MEMORY,
        needs=("allocator snapshot",),
        symptom="The steady peak of live tensors reached the GPU's capacity",
        cause="Weights, gradients, optimizer state and the activations of the peak phase together need more than the "
        "GPU has: nothing leaks and nothing is wasted, the step is simply too big for it",
        decision="Lower the peak: a smaller micro-batch (gradient accumulation keeps the batch), activation "
        "checkpointing (torch.utils.checkpoint), bf16 weights and activations, the optimizer's state sharded "
        "(FSDP, ZeRO) or an 8-bit optimizer",
        condition="at an out-of-memory error that no other cause explains, the live tensors and the request make "
        ">= {peak_share_min:.0%} of what was free plus all this process held",
        thresholds=(PEAK_SHARE,),
        says={
            "oom": Wording(
                symptom="Live tensors ({live}) and the {requested} asked at {where} make {share:.0%} of all the GPU "
                "could give this process ({usable}), in {phase}; the lines holding the most: {lines}",
            )
        },
    ),
    evaluate,
)
