"""What a rule is, and the read-only view of evidence rules evaluate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from gputriage.model.finding import Finding, Severity
from gputriage.model.reading import Reading, Unavailable
from gputriage.model.snapshot import Snapshot


class Evidence:
    """Facts by name. `get` gives the value or None when missing or unavailable."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    def reading(self, name: str) -> Reading:
        return self.snapshot.get(name)

    def get(self, name: str, default: Any = None) -> Any:
        value = self.snapshot.get(name)
        return default if isinstance(value, Unavailable) or value is None else value

    def unavailable(self, name: str) -> Unavailable | None:
        value = self.snapshot.get(name)
        return value if isinstance(value, Unavailable) else None

    def gpu(self, index: int, name: str, default: Any = None) -> Any:
        return self.get(f"gpu.{index}.{name}", default)

    @property
    def gpus(self) -> list[int]:
        count = self.get("gpu.count")
        return list(range(count)) if isinstance(count, int) else []

    def gpu_label(self, index: int) -> str:
        name = self.gpu(index, "name")
        return f"GPU {index}" + (f" ({name})" if name else "")


@dataclass(frozen=True)
class Rule:
    id: str
    step: int
    symptom: str
    cause: str
    decision: str
    threshold: str
    evaluate: Callable[[Evidence], list[Finding]]

    def finding(self, severity: Severity, evidence: dict[str, Any], *, subject: str = "",
                symptom: str | None = None, cause: str | None = None, decision: str | None = None,
                id: str | None = None) -> Finding:
        return Finding(id=id or self.id, severity=severity, step=self.step, symptom=symptom or self.symptom,
                       cause=cause or self.cause, decision=decision or self.decision, evidence=evidence,
                       subject=subject)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "step": self.step, "symptom": self.symptom, "cause": self.cause,
                "decision": self.decision, "threshold": self.threshold}


def pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 1) if whole else 0.0


def gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.1f} GiB"
