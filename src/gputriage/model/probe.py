"""The result of an active, bounded measurement: never a bare float."""

from __future__ import annotations

from typing import Any, Optional

import msgspec


class ProbeResult(msgspec.Struct, frozen=True):
    name: str
    value: float
    unit: str
    reference: Optional[float] = None  # datasheet value in the same unit, when known
    conditions: dict[str, Any] = {}  # clocks, power, temperature, clock-event reasons during the probe
    detail: dict[str, Any] = {}

    @property
    def pct_of_reference(self) -> float | None:
        if not self.reference:
            return None
        return 100.0 * self.value / self.reference

    def to_json(self) -> dict[str, Any]:
        return msgspec.to_builtins(self) | {"pct_of_reference": self.pct_of_reference}
