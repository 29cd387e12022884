"""Named host spans that may overlap (optimizer steps), and which one holds a moment."""

from __future__ import annotations

import bisect
from typing import Sequence


class Spans:
    """Named host spans (start, duration, name) that may overlap, for the question: which span listed first holds a
    moment? Sorted by start once, a query looks back from the moment no further than the longest span."""

    def __init__(self, spans: Sequence[tuple[float, float, str]]) -> None:
        order = sorted(range(len(spans)), key=lambda i: spans[i][0])
        self._starts = [spans[i][0] for i in order]
        self._rows = [(spans[i][0] + spans[i][1], i, spans[i][2]) for i in order]  # end, place in the list, name
        self._longest = max((d for _, d, _ in spans), default=0.0)

    def first_holding(self, t: float) -> str | None:
        """The name of the first listed span with start <= t <= end."""
        best: tuple[int, str] | None = None
        k = bisect.bisect_right(self._starts, t) - 1
        while k >= 0 and self._starts[k] + self._longest >= t:  # a span starting earlier ends before t
            end, place, name = self._rows[k]
            if t <= end and (best is None or place < best[0]):
                best = (place, name)
            k -= 1
        return best[1] if best else None
