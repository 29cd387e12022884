"""The SLO grammar: `ttft=500ms,tpot=50ms` (ms or s; ttft, tpot, itl, e2e) at a percentile."""

from __future__ import annotations

import math
import re

from gputriage.model.load import Slo
from gputriage.serving.errors import LoadOptionError

SLO_KEYS = {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms", "e2e": "e2e_ms"}
PERCENTILES = (50, 90, 99)
_PART = re.compile(r"(\w+)\s*[=<]\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(ms|s)?")


def parse_slo(text: str, percentile: int = 90) -> Slo:
    """`ttft=500ms,tpot=50ms` into an Slo; a part that is not NAME=VALUE, or a value that is not a positive
    finite number, is a LoadOptionError."""
    if percentile not in PERCENTILES:
        raise LoadOptionError("--slo-percentile: 50, 90 or 99")
    slo = Slo(percentile=percentile)
    for part in filter(None, (p.strip() for p in text.split(","))):
        m = _PART.fullmatch(part)
        if m is None or m.group(1) not in SLO_KEYS:
            raise LoadOptionError(
                f"--slo: {part!r} is not NAME=VALUE with NAME one of {', '.join(SLO_KEYS)} (e.g. ttft=500ms,tpot=50ms)"
            )
        value = float(m.group(2)) * (1000.0 if m.group(3) == "s" else 1.0)
        if not (math.isfinite(value) and value > 0):
            raise LoadOptionError(f"--slo: {part!r}: a bound is a positive number of ms or s")
        setattr(slo, SLO_KEYS[m.group(1)], value)
    if all(getattr(slo, k) is None for k in SLO_KEYS.values()):
        raise LoadOptionError(f"--slo: {text!r} sets no bound (e.g. ttft=500ms,tpot=50ms)")
    return slo
