"""The catalog: every finding id any command can report, registered once, with its triage step,
default severity, symptom, cause, decision, thresholds and what it needs to be seen.

Each judgement declares its entries next to the code that emits them (a check rule's module,
`run_findings`, `trace_findings`, `bench`, `budget`, `baseline`); this module gathers them. A finding is only
ever made from an entry (`FindingSpec.finding`), so an id seen in any report can be looked up here
(`gputriage rules`)."""

from __future__ import annotations

from functools import lru_cache

from gputriage.model.finding import FindingSpec

COMMANDS = ("check", "run", "watch", "monitor", "trace", "bench", "load")


@lru_cache(maxsize=1)
def entries() -> dict[str, FindingSpec]:
    from gputriage.diagnosis import bench, budget
    from gputriage.diagnosis.check import default_rules
    from gputriage.diagnosis.run import baseline, idle_held, regimes, vram_growth
    from gputriage.diagnosis.run import compile as run_compile
    from gputriage.diagnosis.run import findings as run_findings
    from gputriage.diagnosis.serving import specs as load_findings
    from gputriage.diagnosis.trace import judge as trace_judge
    from gputriage.diagnosis.trace import specs as trace_findings

    specs: list[FindingSpec] = [s for rule in default_rules() for s in rule.specs]
    specs += [
        *run_findings.SPECS,
        *trace_findings.ALL_SPECS,
        *trace_judge.SPECS,
        *bench.SPECS,
        *budget.SPECS.values(),
        *baseline.SPECS,
        *load_findings.SPECS,
        vram_growth.VRAM_GROWING,
        *run_compile.SPECS,
        *regimes.SPECS,
        *idle_held.SPECS,
    ]
    out: dict[str, FindingSpec] = {}
    for s in specs:
        if s.id in out and out[s.id] != s:
            raise ValueError(f"finding id {s.id} is declared twice, differently")
        out[s.id] = s
    return dict(sorted(out.items()))


def lookup(finding_id: str) -> FindingSpec | None:
    return entries().get(finding_id)


def for_command(command: str | None = None) -> list[FindingSpec]:
    """Every entry, or those a command can emit."""
    return [s for s in entries().values() if command is None or command in s.commands]
