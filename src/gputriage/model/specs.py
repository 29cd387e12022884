"""The GPU spec database (datasheet ceilings), matched by PCI id, name, family, SM count and memory."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "data", "specs.json")


PCIE_LANE_GBS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}  # per lane, one direction


def pcie_link_gbs(gen: int, width: int) -> float:
    """Raw one-direction bandwidth of a PCIe link (GB/s); 0 for an unknown generation."""
    return PCIE_LANE_GBS.get(int(gen), 0.0) * int(width)


@dataclass(frozen=True)
class GpuSpec:
    name: str
    data: dict[str, Any]
    matched_by: str = ""  # 'pci id', 'name', 'family' or 'SM count and memory'

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
    with open(DATA, encoding="utf-8") as fh:
        return json.load(fh)


def all_specs() -> list[GpuSpec]:
    return [GpuSpec(s["name"], s) for s in database()["specs"]]


GIB = 1 << 30
MEMORY_TOLERANCE = 0.06  # what a driver reports against the datasheet's GB, in GiB


def _norm(name: str) -> str:
    """'NVIDIA A100-SXM4-80GB' -> 'a100 sxm4 80gb'; 'Tesla T4' -> 't4'."""
    words = re.sub(r"[-_/,()]+", " ", name.lower()).split()
    return " ".join(w for w in words if w not in ("nvidia", "tesla", "geforce"))


def _has(words: str, token: str) -> bool:
    return re.search(rf"(^| ){re.escape(token)}( |$)", words) is not None


def _memory_off(spec: GpuSpec, memory_bytes: int | None) -> float:
    """Relative distance from the datasheet memory; 0 where nothing is known."""
    if not memory_bytes:
        return 0.0
    nominal = spec.data["memory_gb"] * GIB
    return abs(memory_bytes - nominal) / nominal


def _form(words: str) -> str | None:
    """The form factor a normalized name states: 'pcie', 'sxm' or 'nvl'."""
    return next((f for f in ("pcie", "sxm", "nvl") if any(w.startswith(f) for w in words.split())), None)


def _closest(hits: list[GpuSpec], memory_bytes: int | None, sm_count: int | None, words: str = "") -> GpuSpec:
    """Among parts sharing an id or a family: same SM count, same form factor, nearest memory."""
    stated = _form(words)

    def key(s: GpuSpec) -> tuple[bool, bool, float]:
        sms = s.data.get("sm_count")
        return (
            bool(sm_count and sms and sms != sm_count),
            bool(stated and _form(_norm(s.name)) != stated),
            _memory_off(s, memory_bytes),
        )

    return min(hits, key=key)


def match(
    pci_device_id: str | None = None,
    memory_bytes: int | None = None,
    name: str | None = None,
    sm_count: int | None = None,
) -> GpuSpec | None:
    """The datasheet of a GPU, from whatever is known of it; None rather than a guess.

    In order: PCI device id (memory size between parts sharing one); the name as NVML or the
    profiler gives it; the family named in it ('H100', 'A100', longest first) with SM count, form
    factor and memory choosing the part; SM count and memory alone where they fit one part only.
    `matched_by` says which.
    """
    specs = all_specs()
    if pci_device_id:
        dev = pci_device_id.lower()
        hits = [s for s in specs if dev in s.data.get("pci_device_ids", [])]
        if hits:
            return replace(_closest(hits, memory_bytes, None), matched_by="pci id")
    words = _norm(name) if name else ""
    if words:
        exact = [s for s in specs if words in {_norm(n) for n in [s.name, *s.data.get("names", [])]}]
        if exact:
            return replace(_closest(exact, memory_bytes, sm_count), matched_by="name")
        family = [s for s in specs if s.data.get("family") and _has(words, _norm(s.data["family"]))]
        if family:
            longest = max(len(s.data["family"]) for s in family)
            family = [s for s in family if len(s.data["family"]) == longest]
            stated = re.search(r"(?:^| )(\d+)gb", words)  # 'A100 80GB', not a MIG slice's '3g.40gb'
            memory = memory_bytes or (int(stated.group(1)) * GIB if stated else None)
            return replace(_closest(family, memory, sm_count, words), matched_by="family")
    if sm_count and memory_bytes:
        fits = [
            s for s in specs if s.data.get("sm_count") == sm_count and _memory_off(s, memory_bytes) <= MEMORY_TOLERANCE
        ]
        if len(fits) == 1:
            return replace(fits[0], matched_by="SM count and memory")
    return None


def by_name(name: str) -> GpuSpec | None:
    """The datasheet entry of a GPU named as NVML or a trace names it."""
    return match(name=name)
