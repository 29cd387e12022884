"""A reading is a value, or an `Unavailable` saying why there is none."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

REASONS = (
    "not_supported",
    "no_permission",
    "gpu_lost",
    "not_found",
    "driver_mismatch",
    "no_driver",
    "not_installed",
    "timeout",
    "error",
)


@dataclass(frozen=True)
class Unavailable:
    """Why a reading has no value. Never raised: returned in place of the value."""

    reason: str
    detail: str = ""

    def __post_init__(self) -> None:
        if self.reason not in REASONS:
            raise ValueError(f"unknown reason {self.reason!r}")

    def __str__(self) -> str:
        return f"unavailable ({self.reason}{': ' + self.detail if self.detail else ''})"

    def to_json(self) -> dict[str, str]:
        return {"reason": self.reason, "detail": self.detail}


Reading = Union[Any, Unavailable]


def is_available(reading: Reading) -> bool:
    return not isinstance(reading, Unavailable)
