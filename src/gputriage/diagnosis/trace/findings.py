"""A trace finding as `run --profile` keeps it where the profiler's own overhead explains it."""

from __future__ import annotations

from gputriage.model.finding import Finding, Severity


def as_profiler_artefact(f: Finding, why: str) -> Finding:
    """A trace finding that describes the profiler's own overhead: kept, as information, with what its fix would
    recover."""
    return Finding(
        id=f.id,
        severity=Severity.info,
        step=f.step,
        symptom=f.symptom + " (while profiled)",
        cause=f"{f.cause}; but {why}",
        decision=f.decision,
        evidence=f.evidence,
        subject=f.subject,
        impact=f.impact,
    )
