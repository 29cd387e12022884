"""Frozen data shared by every layer: readings, facts, snapshots, findings, probe results."""

from gputriage.model.reading import Reading, Unavailable, REASONS, is_available
from gputriage.model.fact import Fact
from gputriage.model.finding import Finding, Severity, STEPS
from gputriage.model.snapshot import Snapshot, SnapshotError, SNAPSHOT_SCHEMA, SNAPSHOT_VERSION
from gputriage.model.probe import ProbeResult
from gputriage.model.bottleneck import Bottleneck

__all__ = [
    "Reading", "Unavailable", "REASONS", "is_available", "Fact", "Finding", "Severity", "STEPS",
    "Snapshot", "SnapshotError", "SNAPSHOT_SCHEMA", "SNAPSHOT_VERSION", "ProbeResult", "Bottleneck",
]
