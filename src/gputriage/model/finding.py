"""A finding: what was observed, what it means, what to do, and the evidence; and the catalog
entry (`FindingSpec`) every finding is made from, with its thresholds and the words each kind of occurrence
says (`Wording`, filled from the occurrence's figures)."""

from __future__ import annotations

import enum
import re
import string
from typing import Any, Mapping, Optional

import msgspec

STEPS = {
    1: "Is the GPU actually used?",
    2: "Is it starved or choking?",
    3: "VRAM and allocator",
    4: "Input pipeline",
    5: "Platform integrity",
}

_RANK = {"ok": 0, "info": 1, "warn": 2, "critical": 3}


class Severity(str, enum.Enum):
    """ok < info < warn < critical; JSON carries the name."""

    ok = "ok"
    info = "info"
    warn = "warn"
    critical = "critical"

    @property
    def rank(self) -> int:
        return _RANK[self.value]

    def __lt__(self, other: object) -> bool:
        return self.rank < _rank_of(other)

    def __le__(self, other: object) -> bool:
        return self.rank <= _rank_of(other)

    def __gt__(self, other: object) -> bool:
        return self.rank > _rank_of(other)

    def __ge__(self, other: object) -> bool:
        return self.rank >= _rank_of(other)

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls(text.strip().lower())
        except ValueError:
            raise ValueError(f"unknown severity {text!r}: use one of {', '.join(s.value for s in cls)}") from None


def _rank_of(other: object) -> int:
    if isinstance(other, Severity):
        return other.rank
    raise TypeError(f"cannot compare a severity with {type(other).__name__}")


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    id: str  # stable, dotted: pcie.link_width_degraded; always an id of the catalog
    severity: Severity
    step: int  # 1..5, the triage step
    symptom: str
    cause: str
    decision: str
    evidence: dict[str, Any] = {}
    subject: str = ""  # what it is about: "gpu.0", "host", ...
    impact: Optional[float] = None  # the share of GPU time (or of throughput) the fix would recover, where estimated
    verify: str = ""  # a command that shows whether the fix worked

    def to_json(self) -> dict[str, Any]:
        return msgspec.to_builtins(self)

    @classmethod
    def from_json(cls, data: Any) -> Finding:
        return msgspec.convert(data, cls)


class Threshold(msgspec.Struct, frozen=True):
    """One number a judgement rests on, with what it means and where it comes from."""

    name: str
    value: float
    unit: str
    meaning: str
    source: str


class Wording(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What one kind of occurrence says: templates (`str.format` fields) filled from the figures of the occurrence
    and the entry's thresholds by name; an empty one leaves the entry's own words."""

    symptom: str = ""
    cause: str = ""
    decision: str = ""


DEFAULT_WORDING = "default"


class FindingSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A catalog entry: everything about a finding id except the evidence of one occurrence.

    `commands`: which commands can emit it (check, run, watch, monitor, trace, bench);
    `needs`: what it must have to be seen at all (a GPU, GPM, a profiler trace, the workload's
    process tree, root for the kernel log, ...); `says`: the words of each kind of occurrence, by name
    ("default" when the rule names none). The prose may name a threshold as a field (`{finding_min_pct:g}`):
    `rendered()` writes its value, so the words change with the number."""

    id: str
    step: int
    severity: Severity
    symptom: str
    cause: str
    decision: str
    commands: tuple[str, ...]
    condition: str = ""  # when it fires, in words
    thresholds: tuple[Threshold, ...] = ()
    needs: tuple[str, ...] = ()
    says: dict[str, Wording] = {}

    def finding(
        self,
        evidence: dict[str, Any] | None = None,
        *,
        subject: str = "",
        severity: Severity | None = None,
        say: str = DEFAULT_WORDING,
        fill: Mapping[str, Any] | None = None,
        symptom: str | None = None,
        cause: str | None = None,
        decision: str | None = None,
        impact: float | None = None,
    ) -> Finding:
        """One occurrence, in the words of its kind (`say`), filled from `fill` and the thresholds; the id never
        changes. `symptom`, `cause`, `decision`: words made elsewhere (a verdict's own), never a rule's."""
        if say != DEFAULT_WORDING and say not in self.says:
            raise KeyError(f"{self.id} says nothing as {say!r}")
        words = self.says.get(say, Wording())
        values = {**self.threshold_values(), **(fill or {})}
        return Finding(
            id=self.id,
            severity=severity or self.severity,
            step=self.step,
            symptom=symptom or (words.symptom.format_map(values) if words.symptom else self.symptom),
            cause=cause or (words.cause.format_map(values) if words.cause else self.cause),
            decision=decision or (words.decision.format_map(values) if words.decision else self.decision),
            evidence=evidence or {},
            subject=subject,
            impact=None if impact is None else round(min(1.0, max(0.0, impact)), 3),
        )

    def threshold_values(self) -> dict[str, float]:
        return {t.name: t.value for t in self.thresholds}

    def prose(self) -> dict[str, str]:
        """Every text of the entry, by where it stands (`condition`, `says.pinned.cause`, ...)."""
        texts = {"condition": self.condition, "symptom": self.symptom, "cause": self.cause, "decision": self.decision}
        for name, words in self.says.items():
            texts |= {f"says.{name}.{k}": v for k, v in msgspec.structs.asdict(words).items() if v}
        return texts

    def hand_written(self) -> dict[str, list[float]]:
        """Where the prose writes one of the entry's thresholds' numbers by hand instead of naming it as a field
        (change the threshold, and such words would not change with it)."""
        found = {where: hand_written(text, self.thresholds) for where, text in self.prose().items()}
        return {where: numbers for where, numbers in found.items() if numbers}

    def rendered(self) -> FindingSpec:
        """The entry as the catalog shows it: its thresholds' values written where its prose names them."""
        values = self.threshold_values()
        return msgspec.structs.replace(
            self,
            condition=fill_known(self.condition, values),
            symptom=fill_known(self.symptom, values),
            cause=fill_known(self.cause, values),
            decision=fill_known(self.decision, values),
        )


_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.])")


def _literal_parts(template: str) -> list[str]:
    """The parts of a template outside its fields."""
    try:
        return [text for text, *_ in string.Formatter().parse(template)]
    except ValueError:  # a brace that opens no field: the whole text is literal
        return [template]


def hand_written(template: str, thresholds: tuple[Threshold, ...]) -> list[float]:
    """The numbers a template writes outside its fields that equal a threshold's value (or its percent)."""
    values = {t.value for t in thresholds} | {round(t.value * 100, 6) for t in thresholds if 0 < t.value < 1}
    return [float(n) for part in _literal_parts(template) for n in _NUMBER.findall(part) if float(n) in values]


def fill_known(template: str, values: Mapping[str, Any]) -> str:
    """The template with the fields it names from `values` written; the other fields (an occurrence's figures)
    shown as fields."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:  # a brace that opens no field: nothing to fill
        return template
    out = []
    for text, field, spec, conv in parsed:
        out.append(text)
        if field is None:
            continue
        if field in values and not conv:
            out.append(format(values[field], spec or "g"))
        else:
            out.append("{" + field + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}")
    return "".join(out)


def triage_order(findings: list[Finding]) -> list[Finding]:
    """The order every report shows: findings whose fix has an estimated impact first, the largest first; then the
    others by triage step, most severe first, then id and subject."""
    return sorted(
        findings, key=lambda f: (f.impact is None, -(f.impact or 0.0), f.step, -f.severity.rank, f.id, f.subject)
    )
