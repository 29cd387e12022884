"""The rank the others wait for waits for its own input: its loader is slower than its peers' (triage step 4)."""

from __future__ import annotations

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RUN, RunEvidence
from gputriage.diagnosis.run.rank_causes import CAUSE_GAP, INPUT, at, occurrence, top_line, waits_for_input
from gputriage.diagnosis.run.rank_compare import MIN_WAIT, STRAGGLER_SCORE, STRAGGLING
from gputriage.inworkload.stack_categories import INPUT_WAIT
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording
from gputriage.model.numbers import median


def evaluate(ev: RunEvidence) -> list[Finding]:
    """The straggler, where its main thread waits for input more than its peers', with the line it waits at."""
    r = ev.ranks
    if r is None or r.straggler is None or not waits_for_input(r):
        return []
    evidence, fill, severity, impact = occurrence(r)
    line = top_line(r.straggler, INPUT_WAIT)
    evidence["line"] = at(line)
    fill |= {"input": INPUT(r.straggler), "peers_input": median(INPUT(p) for p in r.peers)}
    fill["where"] = f" at {at(line)}" if line else ""
    say = "loader" if r.straggler.shares.get("loader", 0.0) >= CAUSE_GAP.value else "input"
    return [
        RULE.finding(evidence, subject=f"rank.{fill['rank']}", severity=severity, say=say, fill=fill, impact=impact)
    ]


RULE = Rule(
    FindingSpec(
        id="run.straggler_input",
        step=4,
        severity=Severity.warn,
        commands=RUN,
        needs=("ranks",),
        symptom="One rank holds the others back: it waits for its input longer than they do",
        cause="The rank's data arrives slower than its peers' (its loader, its storage, its shard), and every other "
        "rank waits for it in the next collective",
        decision="Make the slow rank's input as fast as the others': DataLoader workers and prefetching, the same "
        "storage and the same shard sizes on every rank",
        condition=STRAGGLING + ", and its main thread waits for input >= "
        "{straggler_cause_gap:.0%} of its time more than its peers'",
        thresholds=(STRAGGLER_SCORE, MIN_WAIT, CAUSE_GAP),
        says={
            "loader": Wording(
                symptom="Rank {rank} holds the others back ({pattern}): its time outside collectives is {score:.1f}x "
                "rank {best_rank}'s, its loader waits {input:.0%} of its time (its peers {peers_input:.0%}){where}",
                cause="Rank {rank}'s DataLoader gives it its batches slower than the other ranks get theirs: they "
                "wait for it in the next collective, {others_wait:.0%} of their time",
                decision="Make rank {rank}'s loader as fast as the others'{where}: DataLoader workers (num_workers) "
                "and prefetching, the same storage and the same shard sizes on every rank",
            ),
            "input": Wording(
                symptom="Rank {rank} holds the others back ({pattern}): its time outside collectives is {score:.1f}x "
                "rank {best_rank}'s, it waits for input {input:.0%} of its time (its peers {peers_input:.0%}){where}",
                cause="Rank {rank}'s input arrives slower than the other ranks': they wait for it in the next "
                "collective, {others_wait:.0%} of their time",
                decision="Make rank {rank}'s input as fast as the others'{where}: read ahead (DataLoader workers, a "
                "prefetching thread), the same storage and the same shard sizes on every rank",
            ),
        },
    ),
    evaluate,
)
