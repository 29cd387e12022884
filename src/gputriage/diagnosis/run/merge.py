"""Merge the sampler's verdict (run) with the trace's (run --profile).

The sampler sees what a trace cannot: other processes on the GPU, clocks and throttling, VRAM
fill. The trace sees what the sampler cannot: why the GPU idles (launches, synchronizations, host
work) and what the kernels are. So: contended / throttled / vram_pressure from the sampler stand;
otherwise the trace's verdict does, and where the sampler was undecided the trace settles it —
unless the profiled window is not the run: a window whose GPU-Util is far from the rest of the
steady run (the profiler starved the workload, or it caught a phase of its own), or a verdict the
trace itself is unsure of (a short window, a truncated file), does not override a decided sampler
verdict, whatever it says; a window that ended before the steady run began (a warm-up before the
workload's first step) overrides no sampler verdict, decided or not. A host_bound verdict that rests
on a thread beside the main one (busy while the main thread waits) stands against a trace's
input_starved: the trace sees the launching thread wait, not what for. Where the sampler was
undecided, a trace unsure of its verdict settles it only with one of the causes the sampler left open.

A trace whose idle the profiler caused is discounted: where the GPU was busy outside the profiled window
(GPU-Util >= BUSY_OUTSIDE) and the trace names a host-side cause (launch, host, input, sync) that the sampler
neither named nor left open, the trace's idle is the profiler's per-op overhead (it records every op the host
launches: a busy training loop, 100% GPU-Util and 85% SM activity unprofiled on an H200, read 47% idle and
launch_bound in its trace; where the run beside the profiler's hold is too short to measure its effect, the steady
run's GPU-Util stands for the time outside), and the sampler's verdict stands, with or without GPM — unless the
sampler left kernel-side causes open (compute_bound or memory_bound): the trace's kernels, which the profiler's
overhead on the host does not lengthen, settle those by their share of the window where one is the sampler's own
cause or leads it clearly. A profiled window unlike the run does not decide either, whether the sampler was decided
or left open causes the trace does not name (its kernels settle kernel-side causes as above). Between two causes of what
the kernels compute (compute_bound, memory_bound, tensor_cores_idle), the trace's replaces the sampler's only when it
leads it clearly in the window (KERNEL_LEAD): a near tie is a GPU whose time both share, and the sampler's stands.
"""

from __future__ import annotations

from gputriage.diagnosis.run.host_side import beside_main
from gputriage.model.bottleneck import HOST_BOUND
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Threshold
from gputriage.model.run import GpuVerdict, MergedVerdict, ProfilerEffect
from gputriage.model.trace import TraceVerdict

SAMPLER_ONLY = {B.contended, B.throttled, B.vram_pressure}
PROFILER_DROP = Threshold(
    "profiler_drop_util_pts",
    25.0,
    "GPU-Util points",
    "GPU-Util difference between the profiled window and the rest of the steady run that makes "
    "the window unlike the run",
    "judgement, from H200 runs where CUPTI start-up held a sync-heavy loop (26% vs 95%)",
)
BUSY_OUTSIDE = Threshold(
    "profiler_busy_outside_util_pct",
    90.0,
    "% GPU-Util",
    "GPU-Util outside the profiled window at which a trace's host-side idle is the profiler's own overhead",
    "H200: a BERT-large-like bf16 loop at 100% unprofiled read 47% idle in its trace "
    "(launch_bound); a host-bound loop reads under 75%",
)
KERNEL_MIX = (B.compute_bound, B.memory_bound, B.tensor_cores_idle)  # what the kernels compute, and on what
KERNEL_MIX_VALUES = {b.value for b in KERNEL_MIX}
KERNEL_LEAD = Threshold(
    "kernel_lead_ratio",
    1.5,
    "ratio",
    "times the share of the window in the sampler's kernel-side cause that a trace's other kernel-side cause needs "
    "to replace it: under that, the kernels split the GPU's time between both and the sampler's stands",
    "H200 traces: a GPT training loop, elementwise kernels 41% of the window against 24% in GEMMs (1.7x), a "
    "DataLoader-fed loop 60% against 36% (1.7x); a BERT-large-like loop 46-52% against 40-45% (1.14-1.16x: both); "
    "an optimizer step on the GPU, 20% against 19% in a window at 34% GPU-Util (86% unprofiled)",
)
SURE_TRACE = Threshold(
    "sure_trace_confidence",
    0.5,
    "confidence",
    "trace confidence under which a trace does not override a decided sampler verdict",
    "judgement",
)


def merge(
    sampler: GpuVerdict | None,
    trace: TraceVerdict | None,
    effect: ProfilerEffect | None = None,
    regime: str | None = None,
) -> MergedVerdict:
    """The run's verdict. `profiler_starved` is set when the profiled window lost GPU-Util the rest of
    a decided, not host-bound run kept: the trace's host-side findings then describe the profiler. `regime`: the
    sampler's regime the traced window fell in; a trace of another regime than the run's dominant one describes
    that regime (its findings stand), not the run."""
    s = sampler.bottleneck if sampler else None
    t = trace.bottleneck if trace else None
    if t is None:
        return MergedVerdict(bottleneck=s, source="sampler", sampler=s)
    if s in SAMPLER_ONLY:
        return MergedVerdict(
            bottleneck=s,
            source="sampler",
            sampler=s,
            trace=t,
            why=f"{s.value} is visible only to the sampler; the trace's view of the kernels is {t.value}",
        )
    if s is not None and regime is not None and regime in B._value2member_map_ and regime != s.value:
        return MergedVerdict(
            bottleneck=s,
            source="sampler",
            sampler=s,
            trace=t,
            why=f"the profiled window fell in the run's {regime} regime, not in its dominant {s.value} one: its "
            f"{t.value} describes that regime",
        )
    if effect is not None and effect.in_startup:
        return MergedVerdict(
            bottleneck=s,
            source="sampler",
            sampler=s,
            trace=t,
            why=f"the profiled window fell in the start-up, before the steady run (GPU-Util "
            f"{effect.inside_pct:.0f}% while profiled, {effect.outside_pct:.0f}% in the steady "
            f"run): its {t.value} does not describe the run",
        )
    undecided = sampler.undecided_between if sampler else []
    drop = effect.outside_pct - effect.inside_pct if effect else 0.0
    decided = s is not None and not undecided
    starved = decided and s not in HOST_BOUND and drop >= PROFILER_DROP.value
    note = (
        (
            f"the profiler slowed the workload (GPU-Util {effect.inside_pct:.0f}% while profiled, "
            f"{effect.outside_pct:.0f}% otherwise)"
        )
        if effect
        else ""
    )
    if starved and t in HOST_BOUND:
        return MergedVerdict(
            bottleneck=s,
            source="sampler",
            sampler=s,
            trace=t,
            profiler_starved=True,
            profiler_note=note,
            why=f"{note}: the trace's {t.value} is its own overhead",
        )
    # too short a run beside the profiler's hold for its effect: the steady run's GPU-Util, held windows left out
    outside = effect.outside_pct if effect is not None else (sampler.evidence.get("util_pct") if sampler else None)
    if (
        outside is not None
        and outside >= BUSY_OUTSIDE.value
        and t in HOST_BOUND
        and s is not None
        and s not in HOST_BOUND
        and t not in undecided
    ):
        idle = f", {trace.gpu_idle_pct:.0f}% idle" if trace is not None and trace.gpu_idle_pct else ""
        inside = f", {effect.inside_pct:.0f}% while profiled" if effect is not None else " in the steady run"
        note = f"the GPU was busy outside the profiled window (GPU-Util {outside:.0f}%{inside})"
        kernels = kernels_settle(trace, undecided, s)
        said = (
            f"but its kernels, which that overhead does not lengthen, settle what the sampler left open: "
            f"{kernels_said(trace)}"
            if kernels and trace
            else f"not the workload's; the sampler's {s.value} stands"
        )
        return MergedVerdict(
            bottleneck=kernels or s,
            source="trace" if kernels else "sampler",
            sampler=s,
            trace=t,
            profiler_starved=True,
            profiler_note=note,
            why=f"{note}: the trace's {t.value}{idle} is the profiler's own overhead on every op, {said}",
        )
    if s is not None and effect is not None and abs(drop) >= PROFILER_DROP.value and t not in undecided:
        kernels = kernels_settle(trace, undecided, s)  # kernel-side causes left open: its kernels still settle them
        return MergedVerdict(
            bottleneck=kernels or s,
            source="trace" if kernels else "sampler",
            sampler=s,
            trace=t,
            profiler_starved=starved,
            profiler_note=note if starved else "",
            why=f"the profiled window is unlike the rest of the run (GPU-Util {effect.inside_pct:.0f}% while profiled, "
            f"{effect.outside_pct:.0f}% otherwise): its {t.value} does not override the sampler"
            + (f"; its kernels settle what the sampler left open: {kernels_said(trace)}" if kernels and trace else ""),
        )
    if decided and trace is not None and trace.confidence < SURE_TRACE.value:
        return MergedVerdict(
            bottleneck=s,
            source="sampler",
            sampler=s,
            trace=t,
            why=f"the trace is unsure of its {t.value} (confidence {trace.confidence:.2f}: a short "
            "or cut window): the sampler's verdict stands",
        )
    if s == B.host_bound and t == B.input_starved and sampler is not None and beside_main(sampler.evidence):
        return MergedVerdict(
            bottleneck=s,
            source="sampler",
            sampler=s,
            trace=t,
            why="the trace sees the launching thread wait outside framework ops; the sampler saw what "
            "for: another thread of the process busy while the main thread waited",
        )
    if undecided and s is not None and trace is not None and trace.confidence < SURE_TRACE.value and t not in undecided:
        return MergedVerdict(
            bottleneck=s,
            source="sampler",
            sampler=s,
            trace=t,
            why=f"the trace is unsure of its {t.value} (confidence {trace.confidence:.2f}: a short "
            f"or cut window), which is none of the causes the sampler left open: the sampler's "
            f"{s.value} stands",
        )
    if s in KERNEL_MIX and t in KERNEL_MIX and t != s and trace is not None and not leads(trace, t, s):
        return MergedVerdict(
            bottleneck=s,
            source="sampler",
            sampler=s,
            trace=t,
            why=f"the trace's kernels split the window ({kernels_said(trace)}): its {t.value} does not lead the "
            f"sampler's {s.value} clearly, which stands",
        )
    why = (
        f"the sampler could not tell {' from '.join(b.value for b in undecided)} apart; the trace says {t.value}"
        if undecided
        else "the trace attributes each idle gap and each kernel"
    )
    return MergedVerdict(
        bottleneck=t,
        source="trace",
        sampler=s,
        trace=t,
        why=why,
        profiler_starved=starved,
        profiler_note=note if starved else "",
    )


def leads(trace: TraceVerdict, cause: B, other: B) -> bool:
    """The trace gives `cause` KERNEL_LEAD times the share of the window it gives `other`, or more."""
    return trace.shares_pct.get(cause.value, 0.0) >= KERNEL_LEAD.value * trace.shares_pct.get(other.value, 0.0)


def kernels_settle(trace: TraceVerdict | None, undecided: list[B], sampler: B) -> B | None:
    """Where the sampler left kernel-side causes open (compute_bound or memory_bound, say): the one the trace's kernels
    take most of the window in, where it is the sampler's own or leads it clearly; None otherwise."""
    if trace is None or sum(1 for b in undecided if b in KERNEL_MIX) < 2:
        return None
    kernels = {b: trace.shares_pct[b.value] for b in KERNEL_MIX if b.value in trace.shares_pct}
    if not kernels:
        return None
    lead = max(kernels, key=lambda b: kernels[b])
    return lead if lead == sampler or leads(trace, lead, sampler) else None


def kernels_said(trace: TraceVerdict) -> str:
    """The trace's shares of the window in what its kernels compute: "memory_bound 41%, compute_bound 24%"."""
    return ", ".join(f"{k} {v:.0f}%" for k, v in trace.shares_pct.items() if k in KERNEL_MIX_VALUES) + " of the window"
