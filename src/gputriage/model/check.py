"""`check`: the playbook's findings on one snapshot, with every fact they rest on."""

from __future__ import annotations

from typing import Any

import msgspec

from gputriage.model.finding import Finding, Severity
from gputriage.model.reading import Unavailable
from gputriage.model.snapshot import Snapshot

CHECK_SCHEMA = "gputriage.check"
CHECK_VERSION = 1


class Summary(msgspec.Struct):
    counts: dict[str, int]  # findings per severity: info, warn, critical
    worst: Severity


class CheckReport(msgspec.Struct, kw_only=True):
    schema: str = CHECK_SCHEMA
    version: int = CHECK_VERSION
    hostname: str = ""
    taken_at: float = 0.0
    tool_version: str = ""
    summary: Summary
    findings: list[Finding] = []
    facts: dict[str, Any] = {}  # name → value, or {"unavailable": {"reason", "detail"}}


def summarize(findings: list[Finding]) -> Summary:
    counts = {s.value: sum(1 for f in findings if f.severity == s) for s in Severity if s != Severity.ok}
    return Summary(counts=counts, worst=max((f.severity for f in findings), default=Severity.ok))


def check_report(snapshot: Snapshot, findings: list[Finding]) -> CheckReport:
    facts: dict[str, Any] = {}
    for f in snapshot.facts:
        facts[f.name] = {"unavailable": f.value.to_json()} if isinstance(f.value, Unavailable) else f.value
    return CheckReport(
        hostname=snapshot.hostname,
        taken_at=snapshot.taken_at,
        tool_version=snapshot.tool_version,
        summary=summarize(findings),
        findings=findings,
        facts=facts,
    )
