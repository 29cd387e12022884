"""`analyze_trace`: read PyTorch profiler traces and judge them."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from gputriage.api._common import GputriageError
from gputriage.diagnosis.impact import with_impact
from gputriage.diagnosis.trace.judge import judge
from gputriage.diagnosis.verify import Context, with_verify
from gputriage.model.finding import triage_order
from gputriage.model.trace import TraceReport
from gputriage.trace.analyze import analyze_file
from gputriage.trace.load import TraceError


def analyze_trace(paths: Sequence[str | Path] | str | Path) -> TraceReport:
    """Read PyTorch profiler traces (one per rank) and judge them. Files that cannot be read are listed
    in the report's `problems`; GputriageError when none can."""
    files = [paths] if isinstance(paths, (str, Path)) else list(paths)
    ranks, problems = [], []
    for p in files:
        try:
            ranks.append(analyze_file(p))
        except TraceError as exc:
            problems.append(str(exc))
    if not ranks:
        raise GputriageError("; ".join(problems) or "no trace given")
    report = judge([str(p) for p in files], ranks, problems)
    report.findings = triage_order(
        with_verify(with_impact(report.findings), Context("trace", trace_files=[str(p) for p in files]))
    )
    return report
