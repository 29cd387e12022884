"""A GPU's regime while a machine is watched (`watch`, the exporter): the bottleneck its seconds have named long
enough to count as a regime, since when, and the changes from one regime to the next."""

from __future__ import annotations

from typing import Optional

import msgspec


class LiveRegime(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One GPU's current regime."""

    gpu: int
    bottleneck: str
    since_s: float  # unix seconds: when the first second of it began
    before: Optional[str] = None  # the regime before it (None: the first after the start-up)


class RegimeChange(msgspec.Struct, kw_only=True):
    """One GPU going from one regime to another."""

    gpu: int
    from_: str = msgspec.field(name="from")
    to: str
    at_s: float  # unix seconds: when the first second of the new regime began


class RegimesNow(msgspec.Struct, kw_only=True):
    """What the exporter's `/regimes` serves: each GPU's regime where one has lasted, the last changes (oldest
    first) and how many each GPU made since the exporter started."""

    regimes: list[LiveRegime] = []
    changes: list[RegimeChange] = []
    changes_total: dict[int, int] = {}
