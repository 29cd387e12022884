"""The rank the others wait for computes on its host more than they do (its Python, or a lock its threads share)."""

from __future__ import annotations

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RUN, RunEvidence
from gputriage.diagnosis.run.rank_causes import CAUSE_GAP, HOST, at, computes_on_host, occurrence, top_line
from gputriage.diagnosis.run.rank_compare import MIN_WAIT, STRAGGLER_SCORE, STRAGGLING
from gputriage.inworkload.stack_categories import COMPILE, GC, HOST_COMPUTE, LAUNCH
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording
from gputriage.model.numbers import median


def evaluate(ev: RunEvidence) -> list[Finding]:
    """The straggler, where its main thread computes on the host more than its peers' (beyond waiting for a CPU),
    with its line."""
    r = ev.ranks
    if r is None or r.straggler is None or not computes_on_host(r):
        return []
    evidence, fill, severity, impact = occurrence(r)
    line = top_line(r.straggler, HOST_COMPUTE, GC, COMPILE, LAUNCH)
    evidence["line"] = at(line)
    fill |= {"host": HOST(r.straggler), "peers_host": median(HOST(p) for p in r.peers)}
    fill["where"] = f" at {at(line)}" if line else ""
    return [RULE.finding(evidence, subject=f"rank.{fill['rank']}", severity=severity, fill=fill, impact=impact)]


RULE = Rule(
    FindingSpec(
        id="run.straggler_host_compute",
        step=4,
        severity=Severity.warn,
        commands=RUN,
        needs=("ranks",),
        symptom="One rank holds the others back: its main thread computes on the host longer than theirs",
        cause="Work on the rank's training thread that its peers do not do (a metric, logging, a tokenizer, Python "
        "between steps), or the interpreter lock held by another of its threads: every other rank waits for it in "
        "the next collective",
        decision="Move the work off the training thread (a DataLoader worker, a background process) or do it on "
        "every rank alike",
        condition=STRAGGLING + ", and its main thread computes on the host >= "
        "{straggler_cause_gap:.0%} of its time more than its peers' (beyond its extra wait for a CPU)",
        thresholds=(STRAGGLER_SCORE, MIN_WAIT, CAUSE_GAP),
        says={
            "default": Wording(
                symptom="Rank {rank} holds the others back ({pattern}): its time outside collectives is {score:.1f}x "
                "rank {best_rank}'s, its main thread computes on the host {host:.0%} of its time (its peers "
                "{peers_host:.0%}){where}",
                cause="Rank {rank} runs Python (or waits for the interpreter lock another of its threads holds) that "
                "the other ranks do not: they wait for it in the next collective, {others_wait:.0%} of their time",
                decision="Move that work off rank {rank}'s training thread{where} (a DataLoader worker, a background "
                "process) or do it on every rank alike",
            )
        },
    ),
    evaluate,
)
