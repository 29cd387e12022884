"""The read-only view of a snapshot's evidence that `check`'s rules evaluate."""

from __future__ import annotations

from typing import Any, Mapping

from gputriage.model.numbers import GIB  # bytes in a GiB: thresholds of memory are declared in GiB, as the prose says
from gputriage.model.reading import Reading, Unavailable
from gputriage.model.snapshot import Snapshot

CHECK = ("check",)


class Evidence:
    """Facts by name. `get` gives the value or None when missing or unavailable. `settings`: the user's, by name
    (`idle_held_min_s`), for the rules that take one."""

    def __init__(self, snapshot: Snapshot, settings: Mapping[str, float] | None = None) -> None:
        self.snapshot = snapshot
        self.settings = dict(settings or {})

    def reading(self, name: str) -> Reading:
        return self.snapshot.get(name)

    def get(self, name: str, default: Any = None) -> Any:
        value = self.snapshot.get(name)
        return default if isinstance(value, Unavailable) or value is None else value

    def unavailable(self, name: str) -> Unavailable | None:
        value = self.snapshot.get(name)
        return value if isinstance(value, Unavailable) else None

    def gpu(self, index: int, name: str, default: Any = None) -> Any:
        return self.get(f"gpu.{index}.{name}", default)

    @property
    def gpus(self) -> list[int]:
        count = self.get("gpu.count")
        return list(range(count)) if isinstance(count, int) else []

    def gpu_label(self, index: int) -> str:
        name = self.gpu(index, "name")
        return f"GPU {index}" + (f" ({name})" if name else "")


def pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 1) if whole else 0.0


def gib(n_bytes: float) -> str:
    return f"{n_bytes / GIB:.1f} GiB"
