"""Recorded H200 runs (`tests/fixtures/h200/runs_*.json.gz`) by fixture name, and the replay helpers of
`gputriage.testing.recordings` they are judged with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gputriage.testing.recordings import H200_STATIC, judged, judged_samples, load_runs, recorded

FIXTURES = Path(__file__).parent / "fixtures" / "h200"

__all__ = ["FIXTURES", "H200_STATIC", "judged", "judged_samples", "recorded", "runs"]


def runs(name: str) -> dict[str, Any]:
    """A fixture's recorded runs by name."""
    return load_runs(FIXTURES / name)
