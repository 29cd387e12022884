"""The result of an active, bounded measurement: never a bare float."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ProbeResult:
    name: str
    value: float
    unit: str
    reference: float | None = None  # datasheet value in the same unit, when known
    conditions: dict[str, Any] = field(default_factory=dict)  # clocks, power, temp, reasons...
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def pct_of_reference(self) -> float | None:
        if not self.reference:
            return None
        return 100.0 * self.value / self.reference

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "value": self.value, "unit": self.unit, "reference": self.reference,
            "pct_of_reference": self.pct_of_reference, "conditions": self.conditions, "detail": self.detail,
        }
