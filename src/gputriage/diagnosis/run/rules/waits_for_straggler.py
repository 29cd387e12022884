"""A GPU judged comm_bound whose rank waits in its collectives for the job's straggler: the wait is the straggler's
effect, not its links'. It words the GPU's verdict, stated once there (`stated.VerdictRule`)."""

from __future__ import annotations

from gputriage.diagnosis.run.base import RUN, RunEvidence
from gputriage.diagnosis.run.rank_compare import MIN_WAIT, STRAGGLER_SCORE
from gputriage.diagnosis.run.stated import VerdictRule
from gputriage.inworkload.stack_categories import COLLECTIVE_WAIT
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def evaluate(ev: RunEvidence) -> list[Finding]:
    """Each comm_bound GPU of a rank that is not the chronic straggler, with the share its rank waited for it."""
    r = ev.ranks
    s = r.report.straggler if r is not None else None
    if r is None or s is None or not s.chronic:
        return []
    out = []
    for row in r.report.per_rank:
        v = ev.verdicts.get(row.gpu.index) if row.gpu is not None else None
        if row.rank == s.rank or v is None or v.bottleneck != B.comm_bound:
            continue
        wait = row.shares.get(COLLECTIVE_WAIT, 0.0)
        fill = {"gpu": v.gpu, "rank": row.rank, "straggler": s.rank, "wait": wait, "share": v.share}
        evidence = {**v.evidence, "rank": row.rank, "straggler": s.rank, "collective_wait_share": wait}
        out.append(RULE.finding(evidence, subject=f"gpu.{v.gpu}", fill=fill, impact=v.share * wait))
    return out


RULE = VerdictRule(
    FindingSpec(
        id="run.waits_for_straggler",
        step=2,
        severity=Severity.info,
        commands=RUN,
        needs=("ranks", "gpu"),
        symptom="A GPU's collectives take its time because its rank waits for the job's straggler",
        cause="The GPU's rank waits in its collectives for a slower rank: the time is the straggler's, not the links'",
        decision="Fix the straggler (its own finding says why it is slow); faster links would not help",
        condition="a GPU judged comm_bound, held by a rank that is not the job's chronic straggler (a rank whose time "
        "outside collective waits is >= {straggler_score:g}x the best rank's while the best waits >= "
        "{straggler_min_wait:.0%} of its time)",
        thresholds=(STRAGGLER_SCORE, MIN_WAIT),
        says={
            "default": Wording(
                symptom="GPU {gpu} (rank {rank}): its collectives wait for rank {straggler} ({share:.0%} of steady "
                "time comm_bound; its rank waited {wait:.0%} of its time in collectives)",
                cause="Rank {rank} waits in its collectives for rank {straggler}, the job's straggler: the time its "
                "GPU spends in them is rank {straggler}'s delay, not its links'",
                decision="Fix rank {straggler} (its finding says why it is slow): faster links or more overlap would "
                "not give this time back",
            )
        },
    ),
    evaluate,
)
