"""The GPU spec database (datasheet ceilings), matched by PCI device id and memory size."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent / "data" / "specs.json"


PCIE_LANE_GBS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}  # per lane, one direction


def pcie_link_gbs(gen: int, width: int) -> float:
    """Raw one-direction bandwidth of a PCIe link (GB/s); 0 for an unknown generation."""
    return PCIE_LANE_GBS.get(int(gen), 0.0) * int(width)


@dataclass(frozen=True)
class GpuSpec:
    name: str
    data: dict[str, Any]

    def tflops(self, dtype: str) -> float | None:
        return self.data.get(f"{dtype}_tflops")

    @property
    def memory_bw_gbs(self) -> float | None:
        return self.data.get("memory_bw_gbs")

    def ridge_flop_per_byte(self, dtype: str = "bf16") -> float | None:
        """Arithmetic intensity where compute and memory ceilings meet."""
        peak, bw = self.tflops(dtype), self.memory_bw_gbs
        return (peak * 1e12) / (bw * 1e9) if peak and bw else None


@lru_cache(maxsize=1)
def database() -> dict[str, Any]:
    return json.loads(DATA.read_text())


def all_specs() -> list[GpuSpec]:
    return [GpuSpec(s["name"], s) for s in database()["specs"]]


def match(pci_device_id: str | None = None, memory_bytes: int | None = None, name: str | None = None) -> GpuSpec | None:
    """By PCI device id (and memory size where an id is shared); by exact name only as a fallback."""
    specs = all_specs()
    if pci_device_id:
        dev = pci_device_id.lower()
        hits = [s for s in specs if dev in s.data.get("pci_device_ids", [])]
        if memory_bytes and len(hits) > 1:
            hits.sort(key=lambda s: abs(s.data["memory_gb"] * 1e9 - memory_bytes))
        if hits:
            return hits[0]
    if name:
        low = name.lower().replace("nvidia ", "")
        for s in specs:
            if s.name.lower().replace("nvidia ", "") == low:
                return s
    return None


def by_name(name: str) -> GpuSpec | None:
    """The datasheet entry of a GPU named as NVML or a trace names it."""
    return match(name=name)
