"""The one judge of a monitored run (`run`, `watch`, `show`, `monitor()`): a recording (and, for `run --profile`,
the profiler's trace) in, a `RunReport` out. It gathers the run's evidence once, its GPUs judged (`gather`), evaluates
every rule of the run (`rules`, found by being there), states each GPU's verdict once (`stated`), finishes the
findings as every judge does (`diagnosis.finish`) and assembles the report (`assemble`)."""

from __future__ import annotations

from gputriage.diagnosis.budget import Budget, check_windows
from gputriage.diagnosis.finish import finish
from gputriage.diagnosis.rule import evaluate_all, rules_of
from gputriage.diagnosis.run.assemble import report
from gputriage.diagnosis.run.base import RunEvidence
from gputriage.diagnosis.run.gather import gather
from gputriage.diagnosis.run.profiler_cost import profiler_effect as profiler_effect
from gputriage.diagnosis.run.stated import state, verdict_findings
from gputriage.diagnosis.verify import Context
from gputriage.model.finding import Finding
from gputriage.model.recording import Recording
from gputriage.model.run import ProfileReport, RunReport


def judge(
    rec: Recording,
    exit_code: int | None = None,
    *,
    profile: ProfileReport | None = None,
    budget: Budget | None = None,
    complete: bool = True,
    metric: tuple[str, list[tuple[float, float]]] | None = None,
) -> RunReport:
    """`metric`: `run --metric`'s pattern and the (unix time, value) pairs it read in the workload's output."""
    ev = gather(rec, exit_code, profile, metric)
    rules = rules_of("run")
    found = evaluate_all(rules, ev)
    stated = verdict_findings(ev, found, rules)
    beside = [f for f in found if f not in stated] + ev.trace_findings + over_budget(ev, budget)
    finished = finish(stated + beside, Context(rec.kind, workload=rec.command, run_id=rec.run_id))
    state(ev, [f for f in finished if _stated(f, stated)])
    return report(ev, [f for f in finished if not _stated(f, stated)], complete)


def over_budget(ev: RunEvidence, budget: Budget | None) -> list[Finding]:
    """The limits of the user's budget the run crossed (`budget.<key>`)."""
    if budget is None:
        return []
    return check_windows(budget, ev.rec.windows.series, ev.host, ev.rec.static)


def _stated(f: Finding, stated: list[Finding]) -> bool:
    """`f` (finished) is one of the findings that state a GPU's verdict."""
    return any(f.id == s.id and f.subject == s.subject for s in stated)
