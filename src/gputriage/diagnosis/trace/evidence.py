"""What the trace rules read, built once per judgement: one rank's judged window (`RankEvidence`), or the job's
ranks side by side (`RanksEvidence`). A rule says which it reads by the type of its `evaluate`'s parameter
(`reads`); the judge gives each rule its own."""

from __future__ import annotations

import typing
from dataclasses import dataclass
from functools import cache
from typing import Any

from gputriage.diagnosis.rule import Rule
from gputriage.model.specs import GpuSpec
from gputriage.model.trace import Anatomy, MultiRank, RankAnalysis, TraceVerdict


@dataclass(frozen=True)
class RankEvidence:
    """One rank: its analysis, the window of its main device, its verdict and its GPU's datasheet (None where the
    GPU matched no entry)."""

    analysis: RankAnalysis
    window: Anatomy
    verdict: TraceVerdict
    spec: GpuSpec | None

    @property
    def subject(self) -> str:
        return f"gpu.{self.window.device}"

    def pct(self, us: float) -> float:
        """`us` as a percent of the window, to one decimal."""
        return round(100 * us / (self.window.window_us or 1.0), 1)

    def busy_pct(self, *kinds: str) -> float:
        """The window's share of GPU busy time in these kinds of work, in percent."""
        return self.pct(sum(self.window.busy_of(k) for k in kinds))

    def idle_pct(self, *causes: str) -> float:
        """The window's share of GPU idle time for these causes, in percent."""
        return self.pct(sum(self.window.idle_of(c) for c in causes))


@dataclass(frozen=True)
class RanksEvidence:
    """The job's ranks (a trace per rank), and the judge's comparison of them."""

    ranks: list[RankAnalysis]
    compared: MultiRank

    @property
    def judged(self) -> list[RankAnalysis]:
        """The ranks with a verdict."""
        return [r for r in self.ranks if r.verdict is not None]


EVIDENCE = (RankEvidence, RanksEvidence)


@cache
def reads(rule: Rule[Any]) -> type:
    """The evidence `rule` reads: the type of its `evaluate`'s parameter, one of `EVIDENCE`."""
    hints = typing.get_type_hints(rule.evaluate)
    declared = next((t for name, t in hints.items() if name != "return"), None)
    if declared not in EVIDENCE:
        raise TypeError(f"{rule.id} reads {declared!r}: a trace rule reads one of {[t.__name__ for t in EVIDENCE]}")
    return typing.cast(type, declared)
