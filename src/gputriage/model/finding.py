"""A finding: what was observed, what it means, what to do, and the evidence; and the catalog
entry (`FindingSpec`) every finding is made from, with its thresholds."""

from __future__ import annotations

import enum
from typing import Any, Optional

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


class FindingSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A catalog entry: everything about a finding id except the evidence of one occurrence.

    `commands`: which commands can emit it (check, run, watch, monitor, trace, bench);
    `needs`: what it must have to be seen at all (a GPU, GPM, a profiler trace, the workload's
    process tree, root for the kernel log, ...)."""

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

    def finding(
        self,
        evidence: dict[str, Any] | None = None,
        *,
        subject: str = "",
        severity: Severity | None = None,
        symptom: str | None = None,
        cause: str | None = None,
        decision: str | None = None,
        impact: float | None = None,
    ) -> Finding:
        """One occurrence; the wording may be made concrete (symptom with the figures), the id never changes."""
        return Finding(
            id=self.id,
            severity=severity or self.severity,
            step=self.step,
            symptom=symptom or self.symptom,
            cause=cause or self.cause,
            decision=decision or self.decision,
            evidence=evidence or {},
            subject=subject,
            impact=None if impact is None else round(min(1.0, max(0.0, impact)), 3),
        )

    def threshold(self, name: str) -> float:
        for t in self.thresholds:
            if t.name == name:
                return t.value
        raise KeyError(f"{self.id} has no threshold {name!r}")


def triage_order(findings: list[Finding]) -> list[Finding]:
    """The order every report shows: findings whose fix has an estimated impact first, the largest first; then the
    others by triage step, most severe first, then id and subject."""
    return sorted(
        findings, key=lambda f: (f.impact is None, -(f.impact or 0.0), f.step, -f.severity.rank, f.id, f.subject)
    )
