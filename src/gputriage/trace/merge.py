"""Merge the sampler's verdict (run) with the trace's (run --profile).

The sampler sees what a trace cannot: other processes on the GPU, clocks and throttling, VRAM
fill. The trace sees what the sampler cannot: why the GPU idles (launches, synchronizations, host
work) and what the kernels are. So: contended / throttled / vram_pressure from the sampler stand;
otherwise the trace's verdict does, and where the sampler was undecided the trace settles it.
"""

from __future__ import annotations

from typing import Any

SAMPLER_ONLY = {"contended", "throttled", "vram_pressure"}


def merge(sampler: dict[str, Any] | None, trace: dict[str, Any] | None) -> dict[str, Any]:
    s = (sampler or {}).get("bottleneck")
    t = (trace or {}).get("bottleneck")
    if t is None:
        return {"bottleneck": s, "source": "sampler", "sampler": s, "trace": None}
    if s in SAMPLER_ONLY:
        return {"bottleneck": s, "source": "sampler", "sampler": s, "trace": t,
                "why": f"{s} is visible only to the sampler; the trace's view of the kernels is {t}"}
    undecided = (sampler or {}).get("undecided_between") or []
    why = (f"the sampler could not tell {' from '.join(undecided)} apart; the trace says {t}" if undecided
           else "the trace attributes each idle gap and each kernel")
    return {"bottleneck": t, "source": "trace", "sampler": s, "trace": t, "why": why}
