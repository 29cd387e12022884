"""The GPU idles between kernels the host launches slower than the GPU runs them."""

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.trace.base import FINDING_MIN, TRACE, verdict_words
from gputriage.diagnosis.trace.evidence import RankEvidence
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording

SYMPTOM = "GPU idle {launch_idle_pct}% of the window waiting for kernel launches"
CAUSE = (
    "{kernels} kernels with a median of {median_kernel_us:.1f} µs; the median gap between them is "
    "{median_gap_us:.1f} µs: the host issues kernels slower than the GPU runs them"
)
# a loop that synchronizes cannot be captured in a CUDA graph: its syncs go first
AFTER_SYNCS = (
    "First remove the host synchronizations in the loop ({sync_ops}: keep values on the GPU, read them every N "
    "steps): a CUDA graph cannot capture a loop that synchronizes, and each sync drains the queue. Then launch "
    "fewer, bigger kernels: CUDA graphs (torch.cuda.graphs) or torch.compile(mode='reduce-overhead'), larger "
    "batches, fused ops"
)


def evaluate(ev: RankEvidence) -> list[Finding]:
    a = ev.window
    idle_pct = ev.idle_pct("launch")
    if idle_pct < FINDING_MIN.value:
        return []
    figures = {
        "launch_idle_pct": idle_pct,
        "kernels": a.kernels,
        "median_kernel_us": a.median_kernel_us,
        "median_gap_us": a.median_gap_us,
        "sync_calls": a.syncs.count,
    }
    sync_ops = ", ".join(f"{s.op} ×{s.calls}" for s in a.syncs.by_op[:3])
    return [
        RULE.finding(
            figures,
            subject=ev.subject,
            say="after_syncs" if a.syncs.count else "default",
            fill={**figures, "sync_ops": sync_ops},
            impact=idle_pct / 100,
        )
    ]


RULE = Rule(
    FindingSpec(
        id="trace.launch_bound",
        **verdict_words(B.launch_bound),
        severity=Severity.warn,
        commands=TRACE,
        condition="GPU idle waiting for kernel launches >= {finding_min_pct:g}% of the window",
        thresholds=(FINDING_MIN,),
        needs=("trace",),
        says={
            "default": Wording(symptom=SYMPTOM, cause=CAUSE),
            "after_syncs": Wording(symptom=SYMPTOM, cause=CAUSE, decision=AFTER_SYNCS),
        },
    ),
    evaluate,
)
