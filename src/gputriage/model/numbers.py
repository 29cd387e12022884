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


MIB = 1 << 20
GIB = 1 << 30


def half(n: int) -> int:
    """Half of a count, rounded down."""
    return n // 2


def more_than_half(part: float, whole: float) -> bool:
    """`part` is most of `whole`."""
    return part > whole / 2


def duration_text(seconds: float) -> str:
    """A duration as a reader takes it in: "95 s", "42 min", "3.5 h"."""
    if seconds < 2 * 60:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


SAME_INSTANT_S = 1e-6  # times this close are one instant (the float rounding of window edges)


def at_least_half(part: float, whole: float) -> bool:
    """`part` is half of `whole` or more."""
    return part >= whole / 2


def middle(a: float, b: float) -> float:
    """The point half-way between `a` and `b`."""
    return (a + b) / 2
