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
input_starved: the trace sees the launching thread wait, not what for; so does one the main thread's stacks named,
against a trace's cause by elimination (host work outside framework ops it does not see into). Where the sampler was
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

from dataclasses import dataclass
from typing import Any, Callable

from gputriage.diagnosis.run.host_side import beside_main, stack_shares, stacks_say
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


@dataclass(frozen=True)
class _Views:
    """The two verdicts to merge, and what the profiler did to the window the trace saw."""

    sampler: GpuVerdict | None
    trace: TraceVerdict
    s: B | None  # the sampler's verdict
    t: B  # the trace's
    effect: ProfilerEffect | None
    regime: str | None  # the sampler's regime the traced window fell in

    @property
    def undecided(self) -> list[B]:
        return self.sampler.undecided_between if self.sampler else []

    @property
    def drop(self) -> float:
        """GPU-Util points the profiled window lost against the rest of the steady run."""
        return self.effect.outside_pct - self.effect.inside_pct if self.effect else 0.0

    @property
    def decided(self) -> bool:
        return self.s is not None and not self.undecided

    @property
    def starved(self) -> bool:
        """The profiler starved a decided, not host-bound workload of GPU-Util."""
        return self.decided and self.s not in HOST_BOUND and self.drop >= PROFILER_DROP.value

    @property
    def note(self) -> str:
        e = self.effect
        if e is None:
            return ""
        return (
            f"the profiler slowed the workload (GPU-Util {e.inside_pct:.0f}% while profiled, "
            f"{e.outside_pct:.0f}% otherwise)"
        )

    def sampler_stands(self, why: str, **kw: Any) -> MergedVerdict:
        return MergedVerdict(bottleneck=self.s, source="sampler", sampler=self.s, trace=self.t, why=why, **kw)


def merge(
    sampler: GpuVerdict | None,
    trace: TraceVerdict | None,
    effect: ProfilerEffect | None = None,
    regime: str | None = None,
) -> MergedVerdict:
    """The run's verdict. `profiler_starved` is set when the profiled window lost GPU-Util the rest of
    a decided, not host-bound run kept: the trace's host-side findings then describe the profiler. `regime`: the
    sampler's regime the traced window fell in; a trace of another regime than the run's dominant one describes
    that regime (its findings stand), not the run. Each case below, in order, may keep the sampler's verdict (or let
    the trace's kernels settle it); where none does, the trace's stands."""
    s = sampler.bottleneck if sampler else None
    t = trace.bottleneck if trace else None
    if t is None or trace is None:
        return MergedVerdict(bottleneck=s, source="sampler", sampler=s)
    m = _Views(sampler, trace, s, t, effect, regime)
    for case in CASES:
        out = case(m)
        if out is not None:
            return out
    why = (
        f"the sampler could not tell {' from '.join(b.value for b in m.undecided)} apart; the trace says {t.value}"
        if m.undecided
        else "the trace attributes each idle gap and each kernel"
    )
    starved = m.starved
    return MergedVerdict(
        bottleneck=t,
        source="trace",
        sampler=s,
        trace=t,
        why=why,
        profiler_starved=starved,
        profiler_note=m.note if starved else "",
    )


def _sampler_only(m: _Views) -> MergedVerdict | None:
    if m.s not in SAMPLER_ONLY:
        return None
    assert m.s is not None
    return m.sampler_stands(
        f"{m.s.value} is visible only to the sampler; the trace's view of the kernels is {m.t.value}"
    )


def _other_regime(m: _Views) -> MergedVerdict | None:
    r = m.regime
    if m.s is None or r is None or r not in B._value2member_map_ or r == m.s.value:
        return None
    return m.sampler_stands(
        f"the profiled window fell in the run's {r} regime, not in its dominant {m.s.value} one: its "
        f"{m.t.value} describes that regime"
    )


def _in_startup(m: _Views) -> MergedVerdict | None:
    e = m.effect
    if e is None or not e.in_startup:
        return None
    return m.sampler_stands(
        f"the profiled window fell in the start-up, before the steady run (GPU-Util {e.inside_pct:.0f}% while "
        f"profiled, {e.outside_pct:.0f}% in the steady run): its {m.t.value} does not describe the run"
    )


def _profiler_starved(m: _Views) -> MergedVerdict | None:
    if not (m.starved and m.t in HOST_BOUND):
        return None
    note = m.note
    return m.sampler_stands(
        f"{note}: the trace's {m.t.value} is its own overhead", profiler_starved=True, profiler_note=note
    )


def _busy_outside(m: _Views) -> MergedVerdict | None:
    """The GPU busy outside the profiled window (too short a run beside the profiler's hold for its effect: the
    steady run's GPU-Util, held windows left out), a host-side trace the sampler did not name or leave open: the
    profiler's own overhead; the trace's kernels may still settle kernel-side causes the sampler left open."""
    e, trace, s = m.effect, m.trace, m.s
    outside = e.outside_pct if e is not None else (m.sampler.evidence.get("util_pct") if m.sampler else None)
    if outside is None or outside < BUSY_OUTSIDE.value or m.t not in HOST_BOUND or s is None or s in HOST_BOUND:
        return None
    if m.t in m.undecided:
        return None
    idle = f", {trace.gpu_idle_pct:.0f}% idle" if trace.gpu_idle_pct else ""
    inside = f", {e.inside_pct:.0f}% while profiled" if e is not None else " in the steady run"
    note = f"the GPU was busy outside the profiled window (GPU-Util {outside:.0f}%{inside})"
    kernels = kernels_settle(trace, m.undecided, s)
    said = (
        f"but its kernels, which that overhead does not lengthen, settle what the sampler left open: "
        f"{kernels_said(trace)}"
        if kernels
        else f"not the workload's; the sampler's {s.value} stands"
    )
    return MergedVerdict(
        bottleneck=kernels or s,
        source="trace" if kernels else "sampler",
        sampler=s,
        trace=m.t,
        profiler_starved=True,
        profiler_note=note,
        why=f"{note}: the trace's {m.t.value}{idle} is the profiler's own overhead on every op, {said}",
    )


def _window_unlike(m: _Views) -> MergedVerdict | None:
    """A profiled window unlike the rest of the run does not override the sampler; its kernels still settle the
    kernel-side causes it left open."""
    e, s = m.effect, m.s
    if s is None or e is None or abs(m.drop) < PROFILER_DROP.value or m.t in m.undecided:
        return None
    kernels = kernels_settle(m.trace, m.undecided, s)
    starved = m.starved
    return MergedVerdict(
        bottleneck=kernels or s,
        source="trace" if kernels else "sampler",
        sampler=s,
        trace=m.t,
        profiler_starved=starved,
        profiler_note=m.note if starved else "",
        why=f"the profiled window is unlike the rest of the run (GPU-Util {e.inside_pct:.0f}% while profiled, "
        f"{e.outside_pct:.0f}% otherwise): its {m.t.value} does not override the sampler"
        + (f"; its kernels settle what the sampler left open: {kernels_said(m.trace)}" if kernels else ""),
    )


def _trace_unsure(m: _Views) -> MergedVerdict | None:
    if not m.decided or m.trace.confidence >= SURE_TRACE.value:
        return None
    return m.sampler_stands(
        f"the trace is unsure of its {m.t.value} (confidence {m.trace.confidence:.2f}: a short "
        "or cut window): the sampler's verdict stands"
    )


def _beside_main(m: _Views) -> MergedVerdict | None:
    if not (m.s == B.host_bound and m.t == B.input_starved and m.sampler is not None):
        return None
    if not beside_main(m.sampler.evidence):
        return None
    return m.sampler_stands(
        "the trace sees the launching thread wait outside framework ops; the sampler saw what "
        "for: another thread of the process busy while the main thread waited"
    )


def _stacks_seen(m: _Views) -> MergedVerdict | None:
    """A trace's host-side cause by elimination (host work outside framework ops, which it does not see into: no
    loader event over the gaps, or the loop's own work) against a host-side verdict the main thread's stacks named:
    the sampler saw what the host did, the trace did not."""
    if not m.trace.by_elimination or m.s not in HOST_BOUND or m.s is None or m.sampler is None:
        return None
    shares = stack_shares(m.sampler.evidence)
    if shares is None or not stacks_say(shares, m.s, m.sampler.evidence.get("util_pct")):
        return None
    return m.sampler_stands(
        f"the trace names {m.t.value} by elimination (the host outside framework ops, doing what it cannot see); the "
        f"main thread's stacks show what the host did: {m.s.value}"
    )


def _unsure_not_open(m: _Views) -> MergedVerdict | None:
    s = m.s
    if not m.undecided or s is None or m.trace.confidence >= SURE_TRACE.value or m.t in m.undecided:
        return None
    return m.sampler_stands(
        f"the trace is unsure of its {m.t.value} (confidence {m.trace.confidence:.2f}: a short "
        f"or cut window), which is none of the causes the sampler left open: the sampler's "
        f"{s.value} stands"
    )


def _kernels_split(m: _Views) -> MergedVerdict | None:
    s, t = m.s, m.t
    if s not in KERNEL_MIX or t not in KERNEL_MIX or t == s or s is None or leads(m.trace, t, s):
        return None
    return m.sampler_stands(
        f"the trace's kernels split the window ({kernels_said(m.trace)}): its {t.value} does not lead the "
        f"sampler's {s.value} clearly, which stands"
    )


CASES: tuple[Callable[[_Views], MergedVerdict | None], ...] = (
    _sampler_only,
    _other_regime,
    _in_startup,
    _profiler_starved,
    _busy_outside,
    _window_unlike,
    _trace_unsure,
    _beside_main,
    _stacks_seen,
    _unsure_not_open,
    _kernels_split,
)


def leads(trace: TraceVerdict, cause: B, other: B) -> bool:
    """The trace gives `cause` KERNEL_LEAD times the share of the window it gives `other`, or more."""
    return trace.shares_pct.get(cause.value, 0.0) >= KERNEL_LEAD.value * trace.shares_pct.get(other.value, 0.0)


def kernels_settle(trace: TraceVerdict | None, undecided: list[B], sampler: B) -> B | None:
    """Where the sampler left kernel-side causes open (compute_bound or memory_bound, say): the one the trace's kernels
    take most of the window in, where it is the sampler's own or leads it clearly; None otherwise."""
    if trace is None or sum(1 for b in undecided if b in KERNEL_MIX) <= 1:
        return None
    kernels = {b: trace.shares_pct[b.value] for b in KERNEL_MIX if b.value in trace.shares_pct}
    if not kernels:
        return None
    lead = max(kernels, key=lambda b: kernels[b])
    return lead if lead == sampler or leads(trace, lead, sampler) else None


def kernels_said(trace: TraceVerdict) -> str:
    """The trace's shares of the window in what its kernels compute: "memory_bound 41%, compute_bound 24%"."""
    return ", ".join(f"{k} {v:.0f}%" for k, v in trace.shares_pct.items() if k in KERNEL_MIX_VALUES) + " of the window"
