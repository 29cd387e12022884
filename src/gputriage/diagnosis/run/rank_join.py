"""One job's ranks joined from the records of several nodes (`gputriage join`): each node's `run` judged its own
ranks; joined, the ranks are compared again side by side (`rank_compare.compare`, every rank's windows against every
other's) and the run's rank rules (those that need "ranks") say the straggler and the hangs of the whole job."""

from __future__ import annotations

from gputriage.diagnosis.finish import finish
from gputriage.diagnosis.rule import evaluate_all, rules_of
from gputriage.diagnosis.run.base import RunEvidence
from gputriage.diagnosis.run.rank_causes import RanksEvidence
from gputriage.diagnosis.run.rank_compare import compare
from gputriage.diagnosis.verify import Context
from gputriage.model.finding import Finding
from gputriage.model.ranks import RankGpu, RankSeries, RanksReport
from gputriage.model.recording import Recording
from gputriage.model.run import RunVerdict


def joined(parts: list[RanksReport]) -> tuple[RanksReport | None, list[str]]:
    """The ranks of several nodes' reports as one job's, compared again; notes on what could not be joined (a rank
    two records both hold: the later is kept)."""
    series: dict[int, RankSeries] = {}
    gpus: dict[int, RankGpu] = {}
    notes: list[str] = []
    for part in parts:
        rows = {r.rank: r for r in part.per_rank}
        for s in part.series:
            if s.rank in series and series[s.rank].node != s.node:
                notes.append(f"rank {s.rank} is in the records of {series[s.rank].node} and {s.node}: the latter kept")
            series[s.rank] = s
            g = rows[s.rank].gpu if s.rank in rows else None
            if g is not None:
                gpus[s.rank] = g
    hangs = sorted((h for p in parts for h in p.hangs), key=lambda h: h.t_s)
    report = compare([series[k] for k in sorted(series)], gpus, hangs)
    if report is not None:
        report.job_id = next((p.job_id for p in parts if p.job_id), None)
        report.world_size = max((p.world_size or 0 for p in parts), default=0) or report.world_size
    return report, notes


def judge_ranks(rec: Recording, ranks: RanksReport) -> list[Finding]:
    """The findings of the run's rank rules over a job's joined ranks (`rec`: the join's recording, without windows
    of its own)."""
    ev = RunEvidence(rec, None, {}, RunVerdict(), ranks=RanksEvidence(ranks))
    rules = [r for r in rules_of("run") if "ranks" in r.spec.needs]
    return finish(evaluate_all(rules, ev), Context("join"))
