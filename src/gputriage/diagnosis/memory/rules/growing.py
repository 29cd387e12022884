"""Live memory that rose step after step until it failed: tensors kept across steps."""

from gputriage.diagnosis.memory.evidence import MEMORY, Evidence, lines_text, mib, oom_evidence, size
from gputriage.diagnosis.memory.thresholds import FREED_SHARE, GROWTH_SHARE, HALF_SHARE
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def evaluate(ev: Evidence) -> list[Finding]:
    if not ev.grew() or ev.never_fits():
        return []
    g = ev.state.growth
    assert g is not None
    lines = ev.state.growth_lines
    fill = {
        "grown": size(g.grown_bytes),
        "span": f"{g.span_s:,.0f} s" if g.source == "samples" or g.span_s >= 1 else f"{g.span_s * 1000:,.0f} ms",
        "lines": lines_text(lines, growth=True),
        "where": ev.where(),
    }
    evidence = {
        **(oom_evidence(ev) if ev.oom else {}),
        "grown_mib": mib(g.grown_bytes),
        "span_s": g.span_s,
        "seen_by": g.source,
        "lines_grown": [f"{ln.label}={mib(ln.growth_bytes)} MiB" for ln in lines[:5]],
    }
    return [
        RULE.finding(
            evidence,
            subject=f"gpu.{ev.state.device}",
            severity=Severity.critical if ev.oom else Severity.warn,
            say="oom" if ev.oom else "growing",
            fill=fill,
        )
    ]


RULE = Rule(
    FindingSpec(
        id="memory.growing",
        step=3,
        severity=Severity.critical,
        commands=MEMORY,
        needs=("allocator snapshot",),
        symptom="Live GPU memory rises step after step",
        cause="Tensors are kept from one step to the next: losses or outputs appended to a list without `.item()` or "
        "`.detach()` (their autograd graphs kept with them), a cache without a bound, tensors held by a global",
        decision="At the lines that grew: keep a number (`loss.item()`), not the tensor; `.detach().cpu()` what is "
        "kept for later; bound every cache; evaluate under torch.no_grad()",
        condition="the lowest live bytes between steps rose >= {growth_share_min:.0%} of the live bytes at the end "
        "over the time seen (the allocator's history, or the counters `run` read), never falling, each half of it "
        "showing >= {growth_half_share:.0%} of the fitted rise; where the history shows frees, the steps freed >= "
        "{growth_freed_share_min:.0%} of the rise meanwhile",
        thresholds=(GROWTH_SHARE, HALF_SHARE, FREED_SHARE),
        says={
            "oom": Wording(
                symptom="Live memory rose {grown} over {span} until an allocation at {where} failed; the lines that "
                "grew: {lines}",
            ),
            "growing": Wording(symptom="Live memory rose {grown} over {span}; the lines that grew: {lines}"),
        },
    ),
    evaluate,
)
