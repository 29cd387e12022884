"""Per process on a sampled GPU: the longest stretch in which it held memory and ran no kernel (NVML per-process
utilization under `IDLE_PCT`), with the least memory it held through it — what `run.idle_held` is judged on.

Bounded: one small record per process the windows tally (at most their MAX_PROCESSES)."""

from __future__ import annotations

from typing import Any, Hashable

# NVML gives whole percents, and no sample at all for a process that ran no kernel: under 1% is 0.
# diagnosis.thresholds.IDLE_HELD_SM declares the same figure with its source (a test holds the two equal).
IDLE_PCT = 1.0


class IdleStreaks:
    def __init__(self) -> None:
        # key -> [current stretch's first t (nan: none), its least memory, longest s, its end t, its least memory,
        #         first seen t, last seen t]
        self._by: dict[Hashable, list[float]] = {}

    def add(self, key: Hashable, t_s: float, used_bytes: int | None, sm_util_pct: float | None) -> None:
        r = self._by.get(key)
        if r is None:
            r = self._by[key] = [-1.0, -1.0, 0.0, 0.0, -1.0, t_s, t_s]
        r[6] = t_s
        if used_bytes is None or sm_util_pct is None or sm_util_pct >= IDLE_PCT:
            r[0] = -1.0  # computing, or not known: the stretch ends
            return
        if r[0] < 0:
            r[0], r[1] = t_s, float(used_bytes)
        r[1] = min(r[1], float(used_bytes))
        if t_s - r[0] >= r[2]:
            r[2], r[3], r[4] = t_s - r[0], t_s, r[1]

    def current(self, key: Hashable, t_s: float) -> tuple[float, int] | None:
        """The stretch under way at `t_s`: (its seconds so far, the least memory held through it); None if the
        process computes (or was never added)."""
        r = self._by.get(key)
        if r is None or r[0] < 0:
            return None
        return max(0.0, t_s - r[0]), int(r[1])

    def forget(self, keep: set[Hashable]) -> None:
        """Drop the processes not in `keep` (gone from the GPUs)."""
        for key in [k for k in self._by if k not in keep]:
            del self._by[key]

    def fields(self, key: Hashable) -> dict[str, Any]:
        """ProcessSummary's fields for one process ({} if never added)."""
        r = self._by.get(key)
        if r is None:
            return {}
        out: dict[str, Any] = {"first_s": r[5], "last_s": r[6]}
        if r[4] >= 0:
            out.update(idle_longest_s=round(r[2], 1), idle_until_s=r[3], idle_used_min_bytes=int(r[4]))
        return out
