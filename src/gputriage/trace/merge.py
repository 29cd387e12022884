"""Merge the sampler's verdict (run) with the trace's (run --profile).

The sampler sees what a trace cannot: other processes on the GPU, clocks and throttling, VRAM
fill. The trace sees what the sampler cannot: why the GPU idles (launches, synchronizations, host
work) and what the kernels are. So: contended / throttled / vram_pressure from the sampler stand;
otherwise the trace's verdict does, and where the sampler was undecided the trace settles it —
unless the profiler itself starved the GPU: a host-bound trace verdict (the host did not keep the
GPU fed) from a window where GPU-Util fell far below the rest of the run describes the profiler's
own overhead, and a decided sampler verdict stands.
"""

from __future__ import annotations

from typing import Any

SAMPLER_ONLY = {"contended", "throttled", "vram_pressure"}
HOST_BOUND = {"input_starved", "launch_bound", "sync_bound"}
PROFILER_DROP_PTS = 25.0  # GPU-Util points lost while profiling that make a host-bound trace suspect


def merge(sampler: dict[str, Any] | None, trace: dict[str, Any] | None,
          profiled_util: dict[str, float] | None = None) -> dict[str, Any]:
    """The run's verdict. `profiler_starved` is set when the profiled window lost GPU-Util the rest of
    a decided, not host-bound run kept: the trace's host-side findings then describe the profiler."""
    s = (sampler or {}).get("bottleneck")
    t = (trace or {}).get("bottleneck")
    if t is None:
        return {"bottleneck": s, "source": "sampler", "sampler": s, "trace": None}
    if s in SAMPLER_ONLY:
        return {"bottleneck": s, "source": "sampler", "sampler": s, "trace": t,
                "why": f"{s} is visible only to the sampler; the trace's view of the kernels is {t}"}
    undecided = (sampler or {}).get("undecided_between") or []
    pu = profiled_util or {}
    drop = (pu["outside_pct"] - pu["inside_pct"]) if {"inside_pct", "outside_pct"} <= pu.keys() else 0.0
    starved = bool(s) and s not in HOST_BOUND and not undecided and drop >= PROFILER_DROP_PTS
    note = (f"the profiler slowed the workload (GPU-Util {pu.get('inside_pct', 0):.0f}% while profiled, "
            f"{pu.get('outside_pct', 0):.0f}% otherwise)")
    if starved and t in HOST_BOUND:
        return {"bottleneck": s, "source": "sampler", "sampler": s, "trace": t, "profiler_starved": True,
                "profiler_note": note, "why": f"{note}: the trace's {t} is its own overhead"}
    why = (f"the sampler could not tell {' from '.join(undecided)} apart; the trace says {t}" if undecided
           else "the trace attributes each idle gap and each kernel")
    out = {"bottleneck": t, "source": "trace", "sampler": s, "trace": t, "why": why}
    if starved:
        out.update(profiler_starved=True, profiler_note=note)
    return out
