"""One rank holds the others back, and its own evidence names no cause (or its peers do not run the same steps)."""

from __future__ import annotations

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RUN, RunEvidence
from gputriage.diagnosis.run.rank_causes import CAUSE_GAP, named_causes, occurrence
from gputriage.diagnosis.run.rank_compare import MIN_WAIT, SAME_STEPS, STRAGGLER_SCORE, STRAGGLING, same_steps
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def evaluate(ev: RunEvidence) -> list[Finding]:
    """The straggler where no cause rule names one: its peers not comparable (they do not make the same steps), or
    not enough evidence."""
    r = ev.ranks
    if r is None or r.straggler is None or named_causes(r):
        return []
    evidence, fill, severity, impact = occurrence(r)
    apart = same_steps(r.report.per_rank) is False
    if apart:
        evidence["steps"] = {str(x.rank): x.steps for x in r.report.per_rank}
        fill["steps"] = ", ".join(f"rank {x.rank} {x.steps:.0f}" for x in r.report.per_rank)
    say = "apart" if apart else "unknown"
    return [
        RULE.finding(evidence, subject=f"rank.{fill['rank']}", severity=severity, say=say, fill=fill, impact=impact)
    ]


RULE = Rule(
    FindingSpec(
        id="run.straggler",
        step=2,
        severity=Severity.warn,
        commands=RUN,
        needs=("ranks",),
        symptom="One rank holds the others back, for no cause its own evidence names",
        cause="The rank spends longer outside collective waits than its peers, but neither its input, its cores, its "
        "host computation nor its GPU differ from theirs beyond the noise",
        decision="Profile the job (`gputriage run --profile`: every rank's trace, its kernels side by side) or look "
        "at the rank's node (`gputriage check`)",
        condition=STRAGGLING + ", and no cause differs from its peers' by >= "
        "{straggler_cause_gap:.0%} of its time (or the ranks make steps {straggler_steps_ratio:g}x apart)",
        thresholds=(STRAGGLER_SCORE, MIN_WAIT, CAUSE_GAP, SAME_STEPS),
        says={
            "unknown": Wording(
                symptom="Rank {rank} holds the others back ({pattern}): its time outside collectives is {score:.1f}x "
                "rank {best_rank}'s, and its own evidence names no cause",
                cause="The other ranks wait for rank {rank} in their collectives ({others_wait:.0%} of their time), "
                "but its input, its cores, its host computation and its GPU look like its peers': not enough "
                "evidence to say why",
                decision="Profile the job (`gputriage run --profile`: each rank's trace, its kernels side by side) or "
                "look at rank {rank}'s node (`gputriage check`)",
            ),
            "apart": Wording(
                symptom="Rank {rank} spends longer outside collectives than the others ({pattern}), but the ranks do "
                "not make the same steps ({steps})",
                cause="The ranks do not run the same loop (pipeline stages, a rank that evaluates or logs): their "
                "times are not comparable, and rank {rank} is not a straggler in the usual sense",
                decision="Compare ranks that do the same work; balance the stages (or the extra work) between ranks",
            ),
        },
    ),
    evaluate,
)
