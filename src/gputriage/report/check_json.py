"""`check --json`: schema-versioned, documented in README."""

from __future__ import annotations

from typing import Any

from gputriage.model.finding import Finding, Severity
from gputriage.model.reading import Unavailable
from gputriage.model.snapshot import Snapshot

CHECK_SCHEMA = "gputriage.check"
CHECK_VERSION = 1


def summary(findings: list[Finding]) -> dict[str, Any]:
    counts = {s.name: sum(1 for f in findings if f.severity == s) for s in Severity if s != Severity.ok}
    worst = max((f.severity for f in findings), default=Severity.ok)
    return {"counts": counts, "worst": worst.name}


def fact_values(snapshot: Snapshot) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in snapshot.facts:
        out[f.name] = {"unavailable": f.value.to_json()} if isinstance(f.value, Unavailable) else f.value
    return out


def render(snapshot: Snapshot, findings: list[Finding]) -> dict[str, Any]:
    return {
        "schema": CHECK_SCHEMA,
        "version": CHECK_VERSION,
        "hostname": snapshot.hostname,
        "taken_at": snapshot.taken_at,
        "tool_version": snapshot.tool_version,
        "summary": summary(findings),
        "findings": [f.to_json() for f in findings],
        "facts": fact_values(snapshot),
    }
