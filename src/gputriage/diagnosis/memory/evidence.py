"""The one evidence object the memory rules read: the allocator's state (`MemoryState`) and the figures each cause
is decided on, named once so that each rule can exclude the causes before it in the same words."""

from __future__ import annotations

from gputriage.diagnosis.memory.thresholds import (
    FREED_SHARE,
    GROWTH_SHARE,
    HALF_SHARE,
    OTHERS_SHARE,
    PEAK_SHARE,
    REQUEST_SHARE,
)
from gputriage.model.memory import MemoryLine, MemoryState, short_label, size_text

size = size_text
label = short_label

MEMORY = ("memory", "run", "monitor")


def lines_text(lines: list[MemoryLine], n: int = 3, growth: bool = False) -> str:
    """'train.py:42 (6.0 GiB, 120 blocks), ...' for a finding's words."""
    parts = []
    for ln in lines[:n]:
        held = size(ln.growth_bytes) + " grown" if growth and ln.growth_bytes else size(ln.bytes)
        where = f"{label(ln.file, ln.line)} {ln.function}".strip()
        parts.append(f"{where} ({held}, {ln.blocks} blocks)")
    return "; ".join(parts) or "no line recorded (allocation stacks were off)"


class Evidence:
    """Figures in bytes; None where the snapshot and what came with it do not say."""

    def __init__(self, state: MemoryState) -> None:
        self.state = state
        oom = state.oom
        self.oom = oom is not None
        self.requested = oom.requested_bytes if oom is not None else 0
        self.free = oom.device_free_bytes if oom is not None else None
        self.held = state.reserved_bytes
        self.live = state.allocated_bytes
        self.others = state.other_processes_bytes

    @property
    def usable(self) -> int | None:
        """What this process could have had: free on the device and all it held (every tensor freed)."""
        return None if self.free is None else self.free + self.held

    @property
    def capacity(self) -> int | None:
        if self.state.capacity_bytes:
            return self.state.capacity_bytes
        return None if self.usable is None else self.usable + (self.others or 0)

    def never_fits(self) -> bool:
        """The request is larger than the device could ever give this process, other processes' memory included."""
        usable = self.usable
        return self.oom and usable is not None and self.requested > usable + (self.others or 0)

    def others_in_the_way(self) -> bool:
        """Other processes hold a share of the GPU, and without them the request would have fit."""
        cap = self.capacity
        if not self.oom or self.others is None or self.free is None or not cap:
            return False
        return self.others >= OTHERS_SHARE.value * cap and self.requested <= self.free + self.others

    def grew(self) -> bool:
        """Live memory between steps rose step after step over the time seen: troughs that never fell, a rise in
        both halves of it, and (where the history shows frees) steps that freed what they allocated meanwhile."""
        g = self.state.growth
        if g is None or not g.t_s or g.span_s <= 0:
            return False
        end = max(self.live, g.trough_bytes[-1])
        if g.grown_bytes < GROWTH_SHARE.value * end:
            return False
        if any(b < a for a, b in zip(g.trough_bytes, g.trough_bytes[1:])):
            return False
        if g.freed_bytes is not None and g.freed_bytes < FREED_SHARE.value * g.grown_bytes:
            return False
        rate = g.grown_bytes / (g.t_s[-1] - g.t_s[0]) if g.t_s[-1] > g.t_s[0] else 0.0
        half = len(g.t_s) // 2
        for lo, hi in ((0, half), (half, len(g.t_s) - 1)):
            rise = g.trough_bytes[hi] - g.trough_bytes[lo]
            if rise < HALF_SHARE.value * rate * (g.t_s[hi] - g.t_s[lo]):
                return False
        return True

    def one_huge_request(self) -> bool:
        usable = self.usable
        return self.oom and usable is not None and usable > 0 and self.requested >= REQUEST_SHARE.value * usable

    def cache_in_pieces(self) -> bool:
        """The cache held the bytes that were missing, but in no block as large as the request."""
        s = self.state
        missing = self.requested - (self.free or 0)
        return (
            self.oom
            and s.cached_free_bytes > 0
            and s.cached_free_bytes >= missing
            and s.largest_free_bytes < self.requested
        )

    def peak_at_capacity(self) -> bool:
        usable = self.usable
        return (
            self.oom and usable is not None and usable > 0 and self.live + self.requested >= PEAK_SHARE.value * usable
        )

    def where(self) -> str:
        """The line that asked, for a finding's words."""
        oom = self.state.oom
        if oom is None or not oom.line:
            return "a line the stack does not show"
        file, _, line = oom.line.rpartition(":")
        return f"{label(file, int(line))} ({oom.function})"


def mib(n_bytes: float | None) -> float | None:
    return None if n_bytes is None else round(n_bytes / 2**20, 1)


def oom_evidence(ev: Evidence) -> dict[str, object]:
    """The figures every out-of-memory finding carries."""
    s = ev.state
    out: dict[str, object] = {
        "requested_mib": mib(ev.requested),
        "device_free_mib": mib(ev.free),
        "reserved_mib": mib(ev.held),
        "allocated_mib": mib(ev.live),
        "capacity_mib": mib(ev.capacity),
        "line": s.oom.line if s.oom else None,
        "phase": s.oom.phase if s.oom else None,
    }
    return {k: v for k, v in out.items() if v is not None}
