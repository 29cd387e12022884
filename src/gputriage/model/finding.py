"""A finding: what was observed, what it means, what to do, and the evidence."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

STEPS = {
    1: "Is the GPU actually used?",
    2: "Is it starved or choking?",
    3: "VRAM and allocator",
    4: "Input pipeline",
    5: "Platform integrity",
}


class Severity(enum.IntEnum):
    ok = 0
    info = 1
    warn = 2
    critical = 3

    @classmethod
    def parse(cls, text: str) -> "Severity":
        try:
            return cls[text.strip().lower()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r}: use one of {', '.join(s.name for s in cls)}") from None


@dataclass(frozen=True)
class Finding:
    id: str  # stable, dotted: pcie.link_degraded
    severity: Severity
    step: int  # 1..5, the triage step
    symptom: str
    cause: str
    decision: str
    evidence: dict[str, Any] = field(default_factory=dict)
    subject: str = ""  # what it is about: "gpu.0", "host", ...

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "severity": self.severity.name,
            "step": self.step,
            "subject": self.subject,
            "symptom": self.symptom,
            "cause": self.cause,
            "decision": self.decision,
            "evidence": self.evidence,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Finding":
        return cls(
            id=data["id"], severity=Severity.parse(data["severity"]), step=int(data["step"]),
            symptom=data["symptom"], cause=data["cause"], decision=data["decision"],
            evidence=dict(data.get("evidence", {})), subject=data.get("subject", ""),
        )
