"""`analyze_trace`: read PyTorch profiler traces and judge them."""

from __future__ import annotations

import os
from typing import Sequence

from gputriage.api._common import GputriageError
from gputriage.diagnosis.trace.judge import judge
from gputriage.model.files import FileName
from gputriage.model.trace import TraceReport
from gputriage.trace.analyze import analyze_file
from gputriage.trace.load import TraceError


def analyze_trace(paths: Sequence[FileName] | FileName) -> TraceReport:
    """Read PyTorch profiler traces (one per rank) and judge them. Files that cannot be read are listed
    in the report's `problems`; GputriageError when none can."""
    files = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    ranks, problems = [], []
    for p in files:
        try:
            ranks.append(analyze_file(p))
        except TraceError as exc:
            problems.append(str(exc))
    if not ranks:
        raise GputriageError("; ".join(problems) or "no trace given")
    return judge([str(p) for p in files], ranks, problems)
