"""The catalog: every finding id any command can report, registered once, with its triage step,
default severity, symptom, cause, decision, thresholds and what it needs to be seen.

Each judged subject's rules are found in its `rules` package (`diagnosis.rule`: one module per finding, registered
by being there); the entries of the judgements without one (`run`'s verdicts until they move, `bench`, `budget`,
`baseline`) are gathered here. A finding is only ever made from an entry (`FindingSpec.finding`), so an id seen in
any report can be looked up here (`gputriage rules`). The catalog shows each entry `rendered()`: its thresholds'
values written where its prose names them, and none written by hand."""

from __future__ import annotations

import importlib.util
from functools import lru_cache

from gputriage.model.finding import FindingSpec

COMMANDS = ("check", "run", "watch", "monitor", "trace", "bench", "load", "fleet", "memory")


@lru_cache(maxsize=1)
def entries() -> dict[str, FindingSpec]:
    """Every entry by id, as the catalog shows it (`FindingSpec.rendered`)."""
    return {k: v.rendered() for k, v in raw_entries().items()}


@lru_cache(maxsize=1)
def raw_entries() -> dict[str, FindingSpec]:
    """Every entry by id, as declared: its prose with the fields that name its thresholds."""
    from gputriage.diagnosis import bench, budget
    from gputriage.diagnosis.rule import SUBJECTS, rules_of
    from gputriage.diagnosis.run import baseline, labels

    specs: list[FindingSpec] = [
        s for subject in SUBJECTS if has_rules(subject) for r in rules_of(subject) for s in r.specs
    ]
    specs += [
        *labels.VERDICT_SPECS.values(),
        *bench.SPECS,
        *budget.SPECS.values(),
        *baseline.SPECS,
    ]
    out: dict[str, FindingSpec] = {}
    for s in specs:
        if s.id in out and out[s.id] != s:
            raise ValueError(f"finding id {s.id} is declared twice, differently")
        out[s.id] = s
    return dict(sorted(out.items()))


def has_rules(subject: str) -> bool:
    """Whether a subject has its `rules` package yet."""
    try:
        return importlib.util.find_spec(f"gputriage.diagnosis.{subject}.rules") is not None
    except ModuleNotFoundError:
        return False


def lookup(finding_id: str) -> FindingSpec | None:
    return entries().get(finding_id)


def for_command(command: str | None = None) -> list[FindingSpec]:
    """Every entry, or those a command can emit."""
    return [s for s in entries().values() if command is None or command in s.commands]
