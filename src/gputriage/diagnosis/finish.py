"""What every judge does last to its findings, whatever the subject: the share of GPU time each fix would recover
(`impact`), the command that verifies it (`verify`), and the order every report shows (`triage_order`)."""

from __future__ import annotations

from gputriage.diagnosis.impact import with_impact
from gputriage.diagnosis.verify import Context, with_verify
from gputriage.model.finding import Finding, triage_order


def finish(findings: list[Finding], context: Context) -> list[Finding]:
    """The findings with their impact (where their rule did not say it) and verifying command, in triage order."""
    return triage_order(with_verify(with_impact(findings), context))
