"""`bench`: the machine's measured ceilings against its datasheet."""

from __future__ import annotations

from typing import Any, Optional

import msgspec

from gputriage.model.finding import Finding

BENCH_SCHEMA = "gputriage.bench"
BENCH_VERSION = 2


class BenchResult(msgspec.Struct, kw_only=True):
    """A probe result as reported: the measurement, its datasheet share, its healthy band, its change."""

    name: str
    value: float
    unit: str
    reference: Optional[float] = None
    pct_of_reference: Optional[float] = None
    conditions: dict[str, Any] = {}
    detail: dict[str, Any] = {}
    band: Optional[list[float]] = None  # healthy share of the datasheet figure: [low, high]
    change_pct: Optional[float] = None  # since the last bench on this machine


class BenchError(msgspec.Struct):
    probe: str
    error: str


class GpuProcess(msgspec.Struct, kw_only=True):
    gpu: int
    pid: int
    used_bytes: Optional[int] = None


class BenchReport(msgspec.Struct, kw_only=True):
    schema: str = BENCH_SCHEMA
    version: int = BENCH_VERSION
    gpu: Optional[str] = None
    spec: Optional[str] = None
    spec_matched_by: Optional[str] = None  # 'pci id', 'name', 'family', 'SM count and memory'
    quick: bool = False
    results: list[BenchResult] = []
    errors: list[BenchError] = []
    other_processes: list[GpuProcess] = []
    findings: list[Finding] = []
