"""What the trace rules share: the commands that report them, the threshold most of them rest on, and the words a
bottleneck's finding shares with the verdict of the same name (`bottlenecks.MEANINGS`, `verdict.DECISION`)."""

from __future__ import annotations

from typing import Any

from gputriage.diagnosis.bottlenecks import MEANINGS
from gputriage.diagnosis.trace.verdict import DECISION
from gputriage.model.bottleneck import Bottleneck
from gputriage.model.finding import Threshold

TRACE = ("trace", "run")
FINDING_MIN = Threshold(
    "finding_min_pct", 10.0, "% of the window", "time a cause must take to be a finding", "judgement"
)


def verdict_words(b: Bottleneck) -> dict[str, Any]:
    """The step, symptom, cause and decision of the bottleneck `b`, as a `FindingSpec`'s fields."""
    m = MEANINGS[b]
    return {"step": m.step, "symptom": m.symptom, "cause": m.cause, "decision": DECISION[b]}
