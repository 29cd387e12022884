"""Recorded H200 runs (`tests/fixtures/h200/runs_*.json.gz`, cut from run stores by
`benchmarks/store_to_fixture.py`): loaded, replayed into a recording, and judged again by today's rules."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import msgspec

from gputriage.diagnosis.run.judge import judge
from gputriage.model.recording import Recording
from gputriage.model.run import ProfileReport, RunMeta, RunReport
from gputriage.model.sample import Sample
from gputriage.sampling.session import replay

FIXTURES = Path(__file__).parent / "fixtures" / "h200"


def runs(name: str) -> dict[str, Any]:
    """A fixture's recorded runs by name."""
    return json.loads(gzip.decompress((FIXTURES / name).read_bytes()))


def recorded(rec: dict[str, Any]) -> Recording:
    """A recorded run's samples replayed into windows."""
    return replay([msgspec.convert(s, Sample) for s in rec["samples"]], msgspec.convert(rec["meta"], RunMeta),
                  command=rec.get("command") or [])


def judged(rec: dict[str, Any]) -> RunReport:
    """A recorded run judged again, with the profile its report had (its trace's verdict as recorded)."""
    profile = msgspec.convert(rec["profile"], ProfileReport) if rec.get("profile") else None
    return judge(recorded(rec), rec.get("exit_code"), profile=profile)
