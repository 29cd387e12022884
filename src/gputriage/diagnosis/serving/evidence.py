"""What a load judgement reads, built once per sweep: its steps in the order they ran (each with its latency
and throughput figures, what the GPUs, the server's metrics and its process did meanwhile), the steps asked for
(a long-prompt mix's controls left out), the SLOs, the knee, and the memory-bandwidth ceiling of decode where the
model's size is known."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from gputriage.model.load import Knee, LoadStep, Slo

LOAD = ("load",)  # the command a `load.*` finding comes from


@dataclass(frozen=True)
class LoadEvidence:
    """One sweep, as every `load.*` rule reads it."""

    steps: tuple[LoadStep, ...]  # in the order they ran: lightest first, a control after the step it repeats
    slo: Optional[Slo] = None
    knee: Optional[Knee] = None
    bandwidth_gbs: Optional[float] = None  # the GPU's memory bandwidth (measured, else the datasheet's)
    weight_bytes: Optional[float] = None  # the model's weights

    @classmethod
    def of(
        cls,
        steps: Sequence[LoadStep],
        *,
        slo: Optional[Slo] = None,
        knee: Optional[Knee] = None,
        bandwidth_gbs: Optional[float] = None,
        weight_bytes: Optional[float] = None,
    ) -> LoadEvidence:
        return cls(tuple(steps), slo, knee, bandwidth_gbs, weight_bytes)

    @property
    def asked(self) -> tuple[LoadStep, ...]:
        """The steps asked for, lightest first: every rule but the long prompts' cost judges these."""
        return tuple(s for s in self.steps if not s.control)


def activity_pct(s: LoadStep) -> Optional[float]:
    """The busiest GPU's SM activity over a step (GPU-Util where GPM was not read); None: no GPU sampled."""
    vals = [
        v for v in (g.sm_active_pct if g.sm_active_pct is not None else g.util_pct for g in s.gpus) if v is not None
    ]
    return max(vals) if vals else None
