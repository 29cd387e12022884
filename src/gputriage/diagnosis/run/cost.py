"""What a run's GPU time cost, and the share of it that did useful work.

Paid: the run's wall time on each GPU it used, start-up and shut-down included (they are paid for).
Useful: each window's activity times its length, summed — SM activity (the share of SMs with work,
GPM) where the GPU has it, else GPU-Util (a kernel running, however small: an upper bound, said as
such). Waste = paid − useful. With a price per GPU-hour (the user's: `--price`, or `price_per_gpu_hour`
under `[cost]` in the config file; none is assumed), cost = paid × price and the waste's share of it.
At twice the activity, when that is possible (1-50% useful), the same work needs half the GPU-hours.
"""

from __future__ import annotations

import msgspec

from gputriage.model.finding import Threshold
from gputriage.model.run import Cost, GpuStatic
from gputriage.model.window import Windows

MIN_USEFUL = Threshold(
    "cost_min_useful_pct",
    1.0,
    "% of the GPU-hours",
    "the useful share from which what doubling it would save is said (under it the GPU waited for all of it)",
    "judgement (tests/test_cost.py: a GPU that did no useful work is not told what doubling it would save)",
)
MAX_DOUBLED = Threshold(
    "cost_max_doubled_useful_pct",
    50.0,
    "% of the GPU-hours",
    "the useful share up to which it can be doubled",
    "arithmetic: twice a share over 50% is over 100%",
)
FORMULA = (
    "GPU-hours = wall time x GPUs used; useful = sum over 1 s windows of {measure} x window length; "
    "waste = GPU-hours - useful; cost = GPU-hours x price"
)


def cost(
    series: dict[int, Windows],
    static: dict[int, GpuStatic],
    started_s: float,
    ended_s: float,
    price_per_gpu_hour: float | None = None,
    currency: str = "USD",
) -> Cost | None:
    """None without a GPU or a wall time."""
    if not series or ended_s <= started_s:
        return None
    gpm = all(static.get(i, GpuStatic()).gpm for i in series)
    measure = "SM activity" if gpm else "GPU-Util"
    paid_h = (ended_s - started_s) * len(series) / 3600
    useful_h = 0.0
    for s in series.values():
        for w in s:
            share = w.sm_active_pct if gpm else w.util_pct
            if share is not None:
                useful_h += share / 100 * (w.t1_s - w.t0_s) / 3600
    useful_h = min(useful_h, paid_h)
    useful_pct = 100 * useful_h / paid_h if paid_h else 0.0
    out = Cost(
        gpus=len(series),
        gpu_hours=round(paid_h, 6),
        useful_gpu_hours=round(useful_h, 6),
        useful_pct=round(useful_pct, 1),
        measure=measure,
        formula=FORMULA.format(measure=measure),
    )
    if not gpm:
        out.note = "GPU-Util counts a kernel running however few SMs it uses: the useful share is an upper bound"
    if MIN_USEFUL.value <= useful_pct <= MAX_DOUBLED.value:
        out.gpu_hours_at_twice = round(useful_h / (2 * useful_pct / 100), 6)
    return at_price(out, price_per_gpu_hour, currency) if price_per_gpu_hour is not None else out


def at_price(c: Cost, price_per_gpu_hour: float, currency: str = "USD") -> Cost:
    """The same GPU-hours and useful share, in money at this price per GPU-hour."""
    return msgspec.structs.replace(
        c,
        price_per_gpu_hour=price_per_gpu_hour,
        currency=currency,
        cost=round(c.gpu_hours * price_per_gpu_hour, 6),
        waste_cost=round((c.gpu_hours - c.useful_gpu_hours) * price_per_gpu_hour, 6),
    )


def unpriced(price_per_gpu_hour: float, currency: str = "USD") -> str:
    """Why a price gave no cost: no GPU was sampled, so there is no GPU time to count."""
    return (
        f"no cost at {price_per_gpu_hour:g} {currency}/GPU-hour: no GPU was sampled, so there is no GPU time to count"
    )
