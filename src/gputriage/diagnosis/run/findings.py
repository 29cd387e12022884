"""The entries of a monitored run's verdicts (`run.<bottleneck>`): each GPU's verdict is stated once, in the verdict
(`stated`). The run's other findings are its rules' (`diagnosis.run.rules`)."""

from __future__ import annotations

from gputriage.diagnosis.bottlenecks import MEANINGS, severity_of
from gputriage.diagnosis.run.base import RUN
from gputriage.diagnosis.run.classify import LABEL_NEEDS, LABEL_THRESHOLDS
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import FindingSpec

SAMPLER_LABELS = list(B)  # comm_bound from NVLink traffic; in a trace, from the collectives themselves
VERDICT_SPECS: dict[B, FindingSpec] = {
    b: FindingSpec(
        id=f"run.{b.value}",
        step=MEANINGS[b].step,
        severity=severity_of(b),
        symptom=MEANINGS[b].symptom,
        cause=MEANINGS[b].cause,
        decision=MEANINGS[b].decision,
        commands=RUN,
        condition="the label of most of the steady state's 1 s windows (see `diagnosis.run.classify`); "
        "stated once, as the GPU's verdict (`verdict.per_gpu[N].finding`), not among the "
        "findings",
        thresholds=LABEL_THRESHOLDS[b],
        needs=LABEL_NEEDS[b],
    )
    for b in SAMPLER_LABELS
}
SPECS = tuple(VERDICT_SPECS.values())
