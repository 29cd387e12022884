"""The trace's verdict: the dominant bottleneck of a profiled window, with its share.

A GPU that idles is not the limit, so the SMs' idle time is judged first. Host↔device copies that run
with no kernel beside them leave the SMs idle: where idle time and such copies together reach 25% of
the window and the copies take at least as much of it as any idle cause, the verdict is h2d_copy_bound
(pinned batches copied on the compute stream before each step: 47% of the window; an optimizer
offloaded to the host, its copies 68% against 28% of host computation). Else, when the GPU idles at
least 25% of the window, the verdict is the largest idle cause (launch → launch_bound, sync →
sync_bound, host computation in framework ops or after reading a result back → host_bound, the
DataLoader (its own events over the gap) → input_starved, host work outside ops and the loader, which
the window shows elsewhere → host_bound (the loop's own), other host work → input_starved by
elimination (`TraceVerdict.by_elimination`), allocator → vram_pressure). Otherwise it is the largest busy kind:
tensor-core GEMMs and attention → compute_bound, GEMMs on CUDA cores → tensor_cores_idle, fp64
GEMMs → compute_bound (the precision the code asks for; on A100, H100, H200 and B200 they run on
the fp64 tensor cores, `trace.fp64_gemms` says what lower precision would give),
elementwise/reduction/GEMV → memory_bound (as are matrix kernels whose arithmetic intensity lies
under the GPU's ridge point: a batch-1 decode's GEMMs, whatever their name), host↔device copies →
h2d_copy_bound (with the advice for reading back when most of them run device to host),
communication that no computation overlaps → comm_bound — unless most busy time is in kernels whose
blocks cover under half the SMs (communication aside: NCCL uses few blocks by design), which is
underfilled. A window with no GPU work gets no verdict; a short one (fewer than 10
kernels and under 50 ms busy) or one cut short by a truncated file gets one with a confidence that
says so, and under `thresholds.TENTATIVE_TRACE` the verdict is marked tentative.
"""

from __future__ import annotations

from gputriage.diagnosis.bottlenecks import D2H_COPY_DECISION, DECISIONS
from gputriage.diagnosis.thresholds import TENTATIVE_TRACE
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Threshold
from gputriage.model.trace import Anatomy, KernelRow, TraceVerdict
from gputriage.trace import kernel_kinds as kk

J = "judgement"
IDLE_VERDICT = Threshold(
    "idle_verdict_pct", 25.0, "% of the window", "GPU idle time at which the host, not the kernels, is the limit", J
)
UNDERFILLED_BUSY = Threshold(
    "underfilled_busy_pct",
    50.0,
    "% of busy time",
    "busy time in kernels whose blocks cover under half the SMs that makes the GPU underfilled",
    "recorded H200 traces: small-batch loops 90-100%, full batches 0%",
)
MIN_KERNELS = Threshold("min_kernels", 10, "kernels", "kernels a window needs (unless long) to be judged", J)
MIN_BUSY = Threshold("min_busy_us", 50_000.0, "µs", "busy time that makes a window of few kernels worth judging", J)

IDLE_TO = {
    "launch": B.launch_bound,
    "sync": B.sync_bound,
    "host_outside_ops": B.input_starved,  # by elimination: no loader event in the window says what it was
    "host_loading": B.input_starved,  # in the DataLoader: seen
    "host_loop": B.host_bound,  # outside ops and the loader, which the window shows elsewhere: the loop's own work
    "host_in_ops": B.host_bound,
    "host_after_read": B.host_bound,
    "allocator": B.vram_pressure,
}
BUSY_TO = {
    kk.GEMM_TC: B.compute_bound,
    kk.ATTENTION: B.compute_bound,
    kk.GEMM_OTHER: B.tensor_cores_idle,
    kk.GEMM_FP64: B.compute_bound,  # the precision the code asked for, at the rate the GPU has for it
    kk.GEMV: B.memory_bound,
    kk.ELEMENTWISE: B.memory_bound,
    kk.COMM: B.comm_bound,
    kk.H2D_PAGEABLE: B.h2d_copy_bound,
    kk.H2D_PINNED: B.h2d_copy_bound,
    kk.D2H_PAGEABLE: B.h2d_copy_bound,
    kk.D2H_PINNED: B.h2d_copy_bound,
    kk.D2D: B.memory_bound,
    kk.MEMCPY_OTHER: B.h2d_copy_bound,
    kk.MEMSET: B.memory_bound,
}
COPIES = (kk.H2D_PAGEABLE, kk.H2D_PINNED, kk.D2H_PAGEABLE, kk.D2H_PINNED, kk.MEMCPY_OTHER)
# the shared decisions, but for a window in which the GPU did nothing
DECISION = DECISIONS | {B.idle: "The GPU did nothing in the profiled window: profile the steady state"}


def d2h_us(a: Anatomy) -> float:
    """GPU time in copies from the device to the host, pageable and pinned."""
    return a.busy_of(kk.D2H_PAGEABLE) + a.busy_of(kk.D2H_PINNED)


def mostly_d2h(a: Anatomy) -> bool:
    """Most of the copy time runs from the device to the host (results read back, not input sent)."""
    return d2h_us(a) > a.busy_of(kk.H2D_PAGEABLE) + a.busy_of(kk.H2D_PINNED)


def too_little(a: Anatomy) -> bool:
    """Too few kernels (unless they are long) to be sure of a bottleneck."""
    return a.kernels < MIN_KERNELS.value and a.busy_us < MIN_BUSY.value


MIN_GAPS = Threshold(
    "min_gaps", 30, "idle gaps", "idle gaps a window needs for the share of their causes to be sure", "judgement"
)
SURE_KERNELS = Threshold(
    "sure_kernels", 100, "kernels", "kernels a window needs (unless long) for a verdict about them to be sure", J
)
CUT_FILE_CONFIDENCE = Threshold(
    "cut_file_confidence",
    0.5,
    "x confidence",
    "what the confidence of a verdict is multiplied by where the file was cut (truncated): the span judged may not "
    "be the steady state",
    J,
)


def sufficiency(a: Anatomy, idle_verdict: bool) -> float:
    """How much the window holds of what its verdict rests on, against what a sure verdict needs (1:
    enough): GPU work for a verdict about the kernels, idle gaps for one about why the GPU waits."""
    if idle_verdict:
        return min(1.0, a.gaps / MIN_GAPS.value)
    return min(1.0, max(a.kernels / SURE_KERNELS.value, a.busy_us / MIN_BUSY.value))


def under_memory_roof(kernels: list[KernelRow]) -> dict[str, float]:
    """Busy time (µs) of matrix kernels whose arithmetic intensity (FLOPs and bytes from the launching op's
    shapes) lies under the GPU's ridge point, by kind: a batch-1 decode's GEMMs stream their weights from
    memory, whatever their name says."""
    out: dict[str, float] = {}
    for k in kernels:
        if k.kind in (kk.GEMM_TC, kk.GEMM_OTHER, kk.GEMM_FP64, kk.ATTENTION) and k.roof == "memory":
            out[k.kind] = out.get(k.kind, 0.0) + k.total_us
    return out


def decide(a: Anatomy, complete: bool = True, memory_roof_us: dict[str, float] | None = None) -> TraceVerdict:
    """`complete`: False for a truncated file (its verdict halves in confidence). `memory_roof_us`: busy
    time of matrix kernels under the memory roof (`under_memory_roof`), judged as memory-bound work."""
    w = a.window_us or 1.0
    idle_pct = 100 * a.idle_us / w
    shares: dict[B, float] = {}
    for k, v in a.idle.items():
        if k in IDLE_TO:
            shares[IDLE_TO[k]] = shares.get(IDLE_TO[k], 0.0) + 100 * v.us / w
    busy_shares: dict[B, float] = {}
    for k, v in a.busy.items():
        slow = min(v.us, (memory_roof_us or {}).get(k, 0.0))
        busy_shares[BUSY_TO[k]] = busy_shares.get(BUSY_TO[k], 0.0) + 100 * (v.us - slow) / w
        if slow:
            busy_shares[B.memory_bound] = busy_shares.get(B.memory_bound, 0.0) + 100 * slow / w
    idle_verdict = False
    copying = 100 * sum(a.busy_of(k) for k in COPIES) / w  # the SMs idle while a copy runs alone
    if a.busy_us <= 0:
        verdict, share = B.idle, 100.0
    elif copying > 0 and idle_pct + copying >= IDLE_VERDICT.value and copying >= max(shares.values(), default=0.0):
        verdict, share = B.h2d_copy_bound, copying  # copies that take more of the window than any idle cause
    elif idle_pct >= IDLE_VERDICT.value and shares:
        verdict = max(shares, key=lambda k: shares[k])
        share = shares[verdict]
        idle_verdict = True
    elif 100 * a.underfilled_us / a.busy_us >= UNDERFILLED_BUSY.value:
        verdict, share = B.underfilled, 100 * a.underfilled_us / w
    else:
        verdict = max(busy_shares, key=lambda k: busy_shares[k])
        share = busy_shares[verdict]
    everything = {**busy_shares, **shares}
    confidence = round(sufficiency(a, idle_verdict) * (1.0 if complete else CUT_FILE_CONFIDENCE.value), 2)
    return TraceVerdict(
        bottleneck=verdict,
        share_pct=round(share, 1),
        gpu_idle_pct=round(idle_pct, 1),
        confidence=confidence,
        tentative=confidence < TENTATIVE_TRACE.value,
        too_little=too_little(a),
        decision=D2H_COPY_DECISION if verdict == B.h2d_copy_bound and mostly_d2h(a) else DECISION[verdict],
        device=a.device,
        shares_pct={k.value: round(v, 1) for k, v in sorted(everything.items(), key=lambda kv: -kv[1]) if v > 0},
        by_elimination=idle_verdict and unseen_host_work(a, verdict),
    )


def unseen_host_work(a: Anatomy, verdict: B) -> bool:
    """A host-side verdict that rests on the launching thread outside framework ops, where the trace does not see
    what it does: input_starved from host work no event names (a window without loader events), more than from
    the DataLoader's own events; host_bound from the loop's own work outside ops and the loader, more than from
    host work in ops or after a read back."""
    if verdict == B.input_starved:
        return a.idle_of("host_outside_ops") >= a.idle_of("host_loading")
    if verdict == B.host_bound:
        return a.idle_of("host_loop") > a.idle_of("host_in_ops") + a.idle_of("host_after_read")
    return False
