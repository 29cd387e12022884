"""The rank the others wait for runs on another GPU than theirs, or behind a narrower or slower link (step 5)."""

from __future__ import annotations

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RUN, RunEvidence
from gputriage.diagnosis.run.rank_causes import gpu_differs, occurrence
from gputriage.diagnosis.run.rank_compare import MIN_WAIT, STRAGGLER_SCORE, STRAGGLING
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def evaluate(ev: RunEvidence) -> list[Finding]:
    """The straggler, where its GPU is another model than its peers', or its PCIe link narrower or slower."""
    r = ev.ranks
    how = gpu_differs(r) if r is not None else ""
    if r is None or r.straggler is None or r.straggler.gpu is None or not how:
        return []
    evidence, fill, severity, impact = occurrence(r)
    evidence["differs"] = how
    fill |= {"gpu": r.straggler.gpu.index, "how": how}
    return [RULE.finding(evidence, subject=f"rank.{fill['rank']}", severity=severity, fill=fill, impact=impact)]


RULE = Rule(
    FindingSpec(
        id="run.straggler_gpu_differs",
        step=5,
        severity=Severity.warn,
        commands=RUN,
        needs=("ranks", "gpu"),
        symptom="One rank holds the others back: its GPU or its link differs from theirs",
        cause="The rank runs on another GPU model than its peers, or its PCIe link trained narrower or slower: its "
        "work or its transfers take longer, and every other rank waits for it in the next collective",
        decision="Run the job on alike GPUs; for a degraded link, `gputriage check` on that node (pcie.link_degraded) "
        "and reseat or replace the card or riser",
        condition=STRAGGLING + ", and its GPU's model, PCIe width or generation differs from its peers'",
        thresholds=(STRAGGLER_SCORE, MIN_WAIT),
        says={
            "default": Wording(
                symptom="Rank {rank} holds the others back ({pattern}): its time outside collectives is {score:.1f}x "
                "rank {best_rank}'s, and its GPU {gpu} differs: {how}",
                cause="Rank {rank}'s GPU {gpu} is not like its peers' ({how}): the other ranks wait for it in the "
                "next collective, {others_wait:.0%} of their time",
            )
        },
    ),
    evaluate,
)
