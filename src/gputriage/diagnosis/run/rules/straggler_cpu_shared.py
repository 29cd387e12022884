"""The rank the others wait for shares its cores with another process: its main thread waits for a CPU (step 4)."""

from __future__ import annotations

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RUN, RunEvidence
from gputriage.diagnosis.run.rank_causes import CAUSE_GAP, WAITS_FOR_CPU, occurrence, waits_for_cpu
from gputriage.diagnosis.run.rank_compare import MIN_WAIT, STRAGGLER_SCORE, STRAGGLING
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording
from gputriage.model.numbers import median


def evaluate(ev: RunEvidence) -> list[Finding]:
    """The straggler, where its main thread waits for a CPU more than its peers' do, with the cores it runs on."""
    r = ev.ranks
    if r is None or r.straggler is None or not waits_for_cpu(r):
        return []
    evidence, fill, severity, impact = occurrence(r)
    cores = r.straggler.cores
    evidence["cores"] = cores
    fill |= {"runq": WAITS_FOR_CPU(r.straggler), "peers_runq": median(WAITS_FOR_CPU(p) for p in r.peers)}
    fill["cores"] = f" (cores {cores})" if cores else ""
    return [RULE.finding(evidence, subject=f"rank.{fill['rank']}", severity=severity, fill=fill, impact=impact)]


RULE = Rule(
    FindingSpec(
        id="run.straggler_cpu_shared",
        step=4,
        severity=Severity.warn,
        commands=RUN,
        needs=("ranks",),
        symptom="One rank holds the others back: another process runs on its cores",
        cause="The rank's main thread is ready to run but waits for a CPU that another process holds: it computes "
        "slower than its peers, and every other rank waits for it in the next collective",
        decision="Keep other work off the rank's cores (see what runs there: `ps -eo pid,psr,pcpu,comm`), or bind "
        "each rank to cores of its own (the launcher's binding, numactl, taskset)",
        condition=STRAGGLING + ", and its main thread waits for a CPU >= "
        "{straggler_cause_gap:.0%} of its time more than its peers'",
        thresholds=(STRAGGLER_SCORE, MIN_WAIT, CAUSE_GAP),
        says={
            "default": Wording(
                symptom="Rank {rank} holds the others back ({pattern}): its time outside collectives is {score:.1f}x "
                "rank {best_rank}'s, its main thread waited for a CPU {runq:.0%} of its time (its peers "
                "{peers_runq:.0%})",
                cause="Another process runs on rank {rank}'s cores{cores}: its main thread is ready but not running, "
                "and the other ranks wait for it in the next collective, {others_wait:.0%} of their time",
                decision="Keep other work off rank {rank}'s cores{cores} (see what runs there: `ps -eo "
                "pid,psr,pcpu,comm`), or bind each rank to cores of its own (the launcher's binding, numactl, "
                "taskset)",
            )
        },
    ),
    evaluate,
)
