"""Small numeric helpers (the statistics module costs more to import than these take to write)."""

from __future__ import annotations

from typing import Iterable


def median(values: Iterable[float]) -> float:
    """The median of a non-empty collection (mean of the two middle values when even)."""
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        raise ValueError("median of nothing")
    mid = n // 2
    return float(xs[mid]) if n % 2 else (xs[mid - 1] + xs[mid]) / 2.0
