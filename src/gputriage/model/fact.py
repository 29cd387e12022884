"""A fact: one named reading, its unit in its name, and where it came from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gputriage.model.reading import Reading, Unavailable


@dataclass(frozen=True)
class Fact:
    name: str  # dotted, unit in the name: gpu.0.power.draw_mw
    value: Reading
    source: str  # nvml:nvmlDeviceGetPowerUsage, proc:/proc/meminfo, ...

    @property
    def available(self) -> bool:
        return not isinstance(self.value, Unavailable)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "source": self.source}
        if isinstance(self.value, Unavailable):
            out["unavailable"] = self.value.to_json()
        else:
            out["value"] = self.value
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Fact:
        if "unavailable" in data:
            u = data["unavailable"]
            value: Reading = Unavailable(u["reason"], u.get("detail", ""))
        else:
            value = data["value"]
        return cls(name=data["name"], value=value, source=data.get("source", ""))
