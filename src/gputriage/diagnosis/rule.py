"""The rule contract every judged subject shares: a finding is one module of its subject's `rules` package, holding
its catalog entry (`FindingSpec`: symptom, cause, decision, condition, thresholds, the words of each occurrence) and
`evaluate(evidence) -> list[Finding]`, exposed as `RULE`. A module in the package is registered by being there:
`discover` finds it for the judge, the catalog, `gputriage rules`, the rules page and the JSON Schemas.

The evidence is one typed object per subject, built once per judgement (`check`: a snapshot's facts; `run`: the
recording and the verdicts of its GPUs; `trace`: one rank's analysis; `load`: a sweep; `fleet`: the nodes' reports;
`memory`: an allocator snapshot)."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import Any, Callable, Generic, Iterable, Mapping, TypeVar

from gputriage.model.finding import DEFAULT_WORDING, Finding, FindingSpec, Severity

E = TypeVar("E")

# the judged subjects, each with a `rules` package under `gputriage.diagnosis.<subject>`
SUBJECTS = ("check", "run", "trace", "serving", "fleet", "memory")


class Rule(Generic[E]):
    """One finding's rule: its entry (and any other entry it may report, `also`) and its evaluation."""

    def __init__(
        self, spec: FindingSpec, evaluate: Callable[[E], list[Finding]], *, also: tuple[FindingSpec, ...] = ()
    ) -> None:
        self.spec = spec
        self.evaluate = evaluate
        self.also = also

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def step(self) -> int:
        return self.spec.step

    @property
    def specs(self) -> tuple[FindingSpec, ...]:
        return (self.spec, *self.also)

    def finding(
        self,
        evidence: dict[str, Any] | None = None,
        *,
        subject: str = "",
        severity: Severity | None = None,
        say: str = DEFAULT_WORDING,
        fill: Mapping[str, Any] | None = None,
        impact: float | None = None,
    ) -> Finding:
        """One occurrence of the rule's own entry, in the words of its kind (`FindingSpec.finding`)."""
        return self.spec.finding(evidence, subject=subject, severity=severity, say=say, fill=fill, impact=impact)

    def __repr__(self) -> str:
        return f"Rule({self.id})"


@cache
def discover(package: str) -> tuple[Rule[Any], ...]:
    """Every rule of a `rules` package: each module's `RULE`, in triage step then id order. A module without one is
    an error (a rule left half-written is not silently skipped)."""
    pkg = importlib.import_module(package)
    rules = []
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        rule = getattr(module, "RULE", None)
        if not isinstance(rule, Rule):
            raise TypeError(f"{package}.{info.name} is in a rules package but defines no RULE")
        rules.append(rule)
    return tuple(sorted(rules, key=lambda r: (r.step, r.id)))


def rules_of(subject: str) -> tuple[Rule[Any], ...]:
    """The rules of one judged subject (`SUBJECTS`)."""
    return discover(f"gputriage.diagnosis.{subject}.rules")


def evaluate_all(rules: Iterable[Rule[E]], evidence: E) -> list[Finding]:
    """Every finding of every rule over one evidence object."""
    return [f for rule in rules for f in rule.evaluate(evidence)]
