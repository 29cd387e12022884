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

from gputriage.model.bottleneck import HOST_BOUND
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Threshold
from gputriage.model.run import GpuVerdict, MergedVerdict, ProfilerEffect
from gputriage.model.trace import TraceVerdict

SAMPLER_ONLY = {B.contended, B.throttled, B.vram_pressure}
PROFILER_DROP = Threshold("profiler_drop_util_pts", 25.0, "GPU-Util points",
                          "GPU-Util lost while profiled that makes a host-bound trace verdict the profiler's own "
                          "overhead",
                          "judgement, from H200 runs where CUPTI start-up held a sync-heavy loop (26% vs 95%)")


def merge(sampler: GpuVerdict | None, trace: TraceVerdict | None,
          effect: ProfilerEffect | None = None) -> MergedVerdict:
    """The run's verdict. `profiler_starved` is set when the profiled window lost GPU-Util the rest of
    a decided, not host-bound run kept: the trace's host-side findings then describe the profiler."""
    s = sampler.bottleneck if sampler else None
    t = trace.bottleneck if trace else None
    if t is None:
        return MergedVerdict(bottleneck=s, source="sampler", sampler=s)
    if s in SAMPLER_ONLY:
        return MergedVerdict(bottleneck=s, source="sampler", sampler=s, trace=t,
                             why=f"{s.value} is visible only to the sampler; the trace's view of the kernels is "
                                 f"{t.value}")
    undecided = sampler.undecided_between if sampler else []
    drop = effect.outside_pct - effect.inside_pct if effect else 0.0
    starved = s is not None and s not in HOST_BOUND and not undecided and drop >= PROFILER_DROP.value
    note = (f"the profiler slowed the workload (GPU-Util {effect.inside_pct:.0f}% while profiled, "
            f"{effect.outside_pct:.0f}% otherwise)") if effect else ""
    if starved and t in HOST_BOUND:
        return MergedVerdict(bottleneck=s, source="sampler", sampler=s, trace=t, profiler_starved=True,
                             profiler_note=note, why=f"{note}: the trace's {t.value} is its own overhead")
    why = (f"the sampler could not tell {' from '.join(b.value for b in undecided)} apart; the trace says {t.value}"
           if undecided else "the trace attributes each idle gap and each kernel")
    return MergedVerdict(bottleneck=t, source="trace", sampler=s, trace=t, why=why, profiler_starved=starved,
                         profiler_note=note if starved else "")
