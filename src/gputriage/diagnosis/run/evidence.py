"""A verdict's evidence: what the windows it rests on measured, figure by figure."""

from __future__ import annotations

from gputriage.inworkload.stack_categories import LOADER_FIELD, SHARE_FIELDS
from gputriage.model.numbers import median
from gputriage.model.window import WindowMetrics

SHARES = (*SHARE_FIELDS.values(), LOADER_FIELD)  # the main thread's time per category


def window_evidence(chosen: list[WindowMetrics]) -> dict[str, float]:
    """Each figure's median over the chosen windows; the main thread's shares per category, their mean weighted
    by each window's stack samples, and those samples summed (medians taken one category at a time need not add
    up: a run whose windows take turns compiling and running torch's ops read "compiles 93%" where it compiled 63%
    of their time)."""
    out: dict[str, float] = {}
    for name in WindowMetrics.__struct_fields__:
        if name in ("t0_s", "t1_s", "samples") or name in SHARES:
            continue
        vals = [v for v in (getattr(w, name) for w in chosen) if v is not None]
        if vals:
            out[name] = round(float(median(vals)), 2)
    stacked = [(w, w.host_stack_samples) for w in chosen if w.host_stack_samples]
    total = sum(n for _, n in stacked)
    for name in SHARES if total > 0 else ():
        out[name] = round(sum((getattr(w, name) or 0.0) * n for w, n in stacked) / total, 2)
    if total > 0:
        out["host_stack_samples"] = round(total, 2)  # the samples behind those shares
    return out
