"""When requests are sent: a concurrency sweep's steps (1, 2, 4, ... up to a cap), or a request rate's arrival
times (gamma-distributed gaps: shape 1 is Poisson, lower is burstier)."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence

from gputriage.serving.errors import LoadOptionError


def concurrency_steps(max_concurrency: int) -> list[int]:
    """1, 2, 4, ... up to the cap (the cap itself last)."""
    out, c = [], 1
    while c < max_concurrency:
        out.append(c)
        c *= 2
    return out + [max_concurrency]


def check_rates(rates: Sequence[float], burstiness: float) -> None:
    """Rates and burstiness are positive finite numbers (inf would send every request at once: that is a
    concurrency step, `--concurrency N` with N requests)."""
    for r in rates:
        if math.isinf(r) and r > 0:
            raise LoadOptionError(
                "--rate inf: every request at once is a concurrency step; give --concurrency N with --requests N"
            )
        if not (math.isfinite(r) and r > 0):
            raise LoadOptionError(f"--rate {r:g}: a rate is a positive number of requests/s")
    if not (math.isfinite(burstiness) and burstiness > 0):
        raise LoadOptionError(f"--burstiness {burstiness:g}: a positive number (1 is Poisson, lower is burstier)")


def arrival_offsets_s(rate_per_s: float, burstiness: float, rng: random.Random) -> Iterator[float]:
    """Seconds after the step's start at which each request is sent: gaps of mean 1/rate, gamma shape
    `burstiness`."""
    shape = max(burstiness, 1e-3)
    t = 0.0
    while True:
        t += rng.gammavariate(shape, 1.0 / (rate_per_s * shape))
        yield t
