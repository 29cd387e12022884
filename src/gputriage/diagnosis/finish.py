"""What every judge does last to its findings, whatever the subject: the share of GPU time each fix would recover
(`impact`), the command that verifies it (`verify`), and the order every report shows (`triage_order`)."""

from __future__ import annotations

from typing import Mapping

from gputriage.diagnosis.impact import with_impact
from gputriage.diagnosis.verify import Context, with_verify
from gputriage.model.finding import Finding, triage_order
from gputriage.model.run import GpuVerdict


def finish(
    findings: list[Finding], context: Context, verdicts: Mapping[int, GpuVerdict] | None = None
) -> list[Finding]:
    """The findings with their impact and verifying command, in triage order."""
    return triage_order(with_verify(with_impact(findings, verdicts), context))
