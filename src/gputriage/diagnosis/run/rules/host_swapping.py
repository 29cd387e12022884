"""The host swapped pages back in while the run went on (triage step 4)."""

from __future__ import annotations

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RUN, RunEvidence
from gputriage.diagnosis.thresholds import SWAP_IN
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: RunEvidence) -> list[Finding]:
    """A swap-in rate over the threshold in any window (the host's figures are the same in every GPU's series)."""
    swap = [x for x in ev.host.column("swap_in_max_pages_per_s") if x is not None] if len(ev.host) else []
    if not swap or max(swap) <= SWAP_IN.value:
        return []
    evidence = {"max_swap_in_pages_per_s": max(swap), "windows_swapping": sum(1 for x in swap if x > 0)}
    return [RULE.finding(evidence, subject="host")]


RULE = Rule(
    FindingSpec(
        id="run.host_swapping",
        step=4,
        severity=Severity.warn,
        commands=RUN,
        symptom="The host swapped pages back in during the run",
        cause="Host memory is short: the workload and its loaders page instead of feeding the GPU",
        decision="Lower host memory use (fewer/lighter DataLoader workers, smaller prefetch) or add RAM",
        condition="a swap-in rate above {swap_in_pages_per_s:g} pages/s in any window",
        thresholds=(SWAP_IN,),
    ),
    evaluate,
)
