"""A long run judged regime by regime: each phase of the timeline gets its own verdict (what its windows show,
what to do), and a change of regime in the middle of the run is a finding (`rules.regime_changed`): when, from
what to what, and what the workload's own rate did. A job that is compute-bound for an hour and then starves on a
slow shard is not "mostly compute_bound": the second hour has a cause of its own."""

from __future__ import annotations

from typing import Callable, Sequence

from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Threshold
from gputriage.model.numbers import SAME_INSTANT_S, median
from gputriage.model.run import Regime
from gputriage.model.window import WindowMetrics

MIN_REGIME_S = Threshold(
    "regime_min_s",
    10.0,
    "s",
    "length a phase of the timeline needs, and its windows at least three, to count as a regime "
    "of its own (shorter: a blip, a checkpoint, a garbage collection)",
    "judgement: at 1 s windows, three windows are the least a median is taken over",
)
MIN_REGIME_WINDOWS = Threshold(
    "regime_min_windows",
    3.0,
    "windows",
    "windows a phase of the timeline needs, however long they are, to count as a regime",
    "judgement: three windows are the least a median is taken over",
)
BODY_EXCLUDED = ("start-up", "shut-down", "warm-up")


def is_bottleneck_regime(r: Regime) -> bool:
    return not r.regime.startswith(BODY_EXCLUDED) and r.regime in B._value2member_map_


Wording = Callable[[B, dict[str, float]], str]


BLIP = Threshold(
    "regime_blip_windows",
    1.5,
    "windows",
    "a run of labels held for less than this many windows is one window: a blip, folded into the regime around it",
    "judgement: between one window and two, so that one window is a blip and two are not whatever the rounding of "
    "their edges (live regimes, `watch`, and the run's timeline alike)",
)
BLIP_WINDOWS = BLIP.value


def lasts(r: Regime, window_s: float) -> bool:
    """A regime long enough to count as one (not a blip)."""
    return is_bottleneck_regime(r) and r.end_s - r.start_s >= max(
        MIN_REGIME_S.value, MIN_REGIME_WINDOWS.value * window_s
    )


def lasting(timeline: Sequence[Regime], window_s: float) -> list[Regime]:
    """The regimes of a timeline that count as regimes (`lasts`): no start-up, warm-up, shut-down or blip."""
    return [r for r in timeline if lasts(r, window_s)]


def describe_regimes(
    timeline: list[Regime], ws: Sequence[WindowMetrics], t0: float, window_s: float, describe: Wording, decide: Wording
) -> list[Regime]:
    """Each lasting bottleneck regime with the medians of its windows, its summary and decision, in the verdict's
    own wording (`describe`, `decide`)."""
    out = []
    for r in timeline:
        if not lasts(r, window_s):
            out.append(r)
            continue
        inside = [
            w for w in ws if w.t0_s - t0 >= r.start_s - SAME_INSTANT_S and w.t1_s - t0 <= r.end_s + SAME_INSTANT_S
        ]
        evidence = _medians(inside)
        b = B(r.regime)
        out.append(
            Regime(
                r.start_s,
                r.end_s,
                r.regime,
                summary=f"{describe(b, evidence)}: {b.value}",
                decision=decide(b, evidence),
                evidence=evidence,
            )
        )
    return out


def _medians(ws: Sequence[WindowMetrics]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name in (
        "util_pct",
        "sm_active_pct",
        "tensor_active_pct",
        "dram_active_pct",
        "pcie_rx_mib_per_s",
        "pcie_tx_mib_per_s",
        "power_w",
        "sm_clock_mhz",
        "temperature_c",
        "workload_cpu_pct",
        "gpu_main_thread_pct",
        "top_thread_pct",
        "used_bytes",
    ):
        vals = [v for v in (getattr(w, name) for w in ws) if v is not None]
        if vals:
            out[name] = round(float(median(vals)), 2)
    return out
