"""`check`: the playbook's rules over one snapshot; each rule is a module of `rules/`, found by being there."""

from __future__ import annotations

from typing import Any, Mapping

from gputriage.diagnosis.check.base import Evidence
from gputriage.diagnosis.rule import Rule, evaluate_all, rules_of
from gputriage.model.finding import Finding, triage_order
from gputriage.model.snapshot import Snapshot


def default_rules() -> list[Rule[Evidence]]:
    return list(rules_of("check"))


def evaluate(
    snapshot: Snapshot, rules: list[Rule[Any]] | None = None, settings: Mapping[str, float] | None = None
) -> list[Finding]:
    """Every finding of every rule, in triage order: step, then most severe first. `settings`: the user's, by name
    (`idle_held_min_s`)."""
    return triage_order(evaluate_all(rules if rules is not None else default_rules(), Evidence(snapshot, settings)))
