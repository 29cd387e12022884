"""What every collector shares: the context it reads from and a helper to turn NVML calls into facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from gputriage.backends.host import Host
from gputriage.backends.nvml import NvmlBackend
from gputriage.model.fact import Fact
from gputriage.model.reading import Reading, Unavailable


@dataclass
class Context:
    nvml: NvmlBackend
    host: Host
    gpus: list[int] = field(default_factory=list)
    nvml_error: Unavailable | None = None
    ignore_pids: set[int] = field(default_factory=set)  # our own helpers (the load child)


def nvml_fact(
    ctx: Context, index: int | None, name: str, fn: str, *args: Any, transform: Callable[[Any], Any] | None = None
) -> Fact:
    """Call `fn` and name the result; `transform` maps a value (never an Unavailable)."""
    reading: Reading = ctx.nvml.call(fn, index, *args)
    if transform is not None and not isinstance(reading, Unavailable):
        try:
            reading = transform(reading)
        except (TypeError, ValueError, KeyError, IndexError) as exc:
            reading = Unavailable("error", f"{fn} returned {reading!r}: {exc}")
    full = name if index is None else f"gpu.{index}.{name}"
    return Fact(full, reading, f"nvml:{fn}")


def fact(name: str, value: Reading, source: str) -> Fact:
    return Fact(name, value, source)
