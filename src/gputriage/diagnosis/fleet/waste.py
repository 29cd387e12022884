"""The fleet's GPUs idle at the check, and at the user's price what the idle share costs: a reading, not a verdict
(one instant, no threshold)."""

from __future__ import annotations

from typing import Optional

from gputriage.diagnosis.fleet.nodes import not_visible
from gputriage.model.fleet import NodeResult, Waste


def waste(nodes: list[NodeResult], price: Optional[float], currency: str = "USD") -> Optional[Waste]:
    """The fleet's GPUs idle at the check: SM activity where every node read it, else GPU-Util (an upper
    bound on useful work). A GPU Ray counts that its driver does not see does no work: it counts, idle."""
    figs = [n.figures for n in nodes if n.ok and n.figures is not None and n.figures.gpus]
    use_sm = bool(figs) and all(f.sm_active_pct is not None for f in figs)
    pairs: list[tuple[int, float]] = [
        (f.gpus, v) for f in figs if (v := f.sm_active_pct if use_sm else f.util_pct) is not None
    ]
    unseen = sum(not_visible(n) for n in nodes)
    pairs += [(unseen, 0.0)] if unseen else []
    gpus = sum(g for g, _ in pairs)
    if not gpus:
        return None
    busy = sum(g * v for g, v in pairs) / gpus
    idle = gpus * (1 - busy / 100)
    w = Waste(
        gpus=gpus,
        busy_pct=round(busy, 1),
        measure="SM activity" if use_sm else "GPU-Util (an upper bound)",
        idle_gpu_equivalents=round(idle, 2),
        not_visible=unseen,
    )
    if price is not None:
        w.price_per_gpu_hour, w.currency = price, currency
        w.idle_cost_per_hour = round(idle * price, 2)
    return w
