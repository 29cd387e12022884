"""What every serving judgement says of a step: its load's name and value, and whether its requests failed."""

from __future__ import annotations

from gputriage.model.finding import Threshold
from gputriage.model.load import LoadStep

ERROR_SHARE = Threshold(
    "error_share", 0.01, "of requests", "failed requests (HTTP errors, timeouts, broken streams)", "judgement"
)


def load_name(s: LoadStep) -> str:
    return f"concurrency {s.concurrency}" if s.concurrency is not None else f"{s.rate_per_s:g} requests/s"


def load_x(s: LoadStep) -> float:
    return float(s.concurrency if s.concurrency is not None else s.rate_per_s or 0.0)


def failed(s: LoadStep) -> bool:
    """At least ERROR_SHARE of the step's requests failed: it was not served cleanly."""
    return s.requests > 0 and sum(s.errors.values()) >= ERROR_SHARE.value * s.requests
