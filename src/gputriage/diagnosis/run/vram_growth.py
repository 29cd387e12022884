"""GPU memory that grows through the steady state (`run.vram_growing`): a leak, or a cache without a
bound, found from the memory NVML says is used on the GPU, window by window.

A caching allocator grows while a workload warms up and then holds still: memory that keeps growing
after the start-up, at a steady rate, in both halves of the steady state, will fill the GPU. The
finding gives the rate, and when the GPU will be full at that rate. Where the workload reports its
allocator (a Python workload under `run`), what its tensors hold tells the two causes apart: held
bytes growing as fast are tensors kept (a leak); held bytes flat are the allocator's cache growing
with shapes that keep changing (it gives blocks back only when an allocation fails, with a cudaFree
and a retry that stall the GPU).
"""

from __future__ import annotations

from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold
from gputriage.model.run import GpuStatic, GpuVerdict
from gputriage.model.window import Windows

J = "judgement"
GROWTH_MIN = Threshold(
    "vram_growth_min_mib",
    256.0,
    "MiB",
    "growth over the steady state under which memory is the allocator settling, not a leak",
    "judgement: a caching allocator's segments are 2-20 MiB",
)
GROWTH_MIN_S = Threshold("vram_growth_min_steady_s", 5.0, "s", "steady state a growth rate needs to be judged", J)
HALF_SHARE = Threshold(
    "vram_growth_half_share",
    0.25,
    "share of the fitted growth",
    "growth each half of the steady state must show against the rate fitted over all of it (a "
    "single step up, the allocator settling once, shows in one half only)",
    J,
)
HELD_SHARE = Threshold(
    "vram_growth_held_share",
    0.5,
    "of the GPU's growth",
    "growth of the bytes the workload's tensors hold (the allocator's report) that makes it a leak "
    "rather than the allocator's cache",
    "recorded H200 runs: predictions kept 1.03, a block recompiled for each new length 0.03",
)

VRAM_GROWING = FindingSpec(
    id="run.vram_growing",
    step=3,
    severity=Severity.warn,
    commands=("run", "watch", "monitor"),
    needs=("gpu",),
    symptom="GPU memory grows through the steady state",
    cause="Tensors kept on the GPU step after step (a leak), or a caching allocator whose cache grows with shapes "
    "that keep changing",
    decision="Run it under `gputriage run` (Python), which tells the two apart from the allocator's counters; "
    "torch.cuda.memory._record_memory_history() and a snapshot show which allocations stay",
    condition=f"GPU memory used grows >= {GROWTH_MIN.value:g} MiB over a steady state of >= {GROWTH_MIN_S.value:g} "
    f"s, at a fitted rate that each half of it shows at least {HALF_SHARE.value:.0%} of",
    thresholds=(GROWTH_MIN, GROWTH_MIN_S, HALF_SHARE, HELD_SHARE),
)


LEAK_CAUSE = (
    "Something keeps tensors on the GPU step after step: outputs, losses or predictions appended to a "
    "list (with their autograd graph when not detached), a cache without a bound (a KV cache, memoized "
    "results), or tensors held by a closure or a global; at this rate the GPU runs out of memory"
)
LEAK_DECISION = (
    "Keep what a step produces off the GPU or out of the graph: `.item()` or `.detach().cpu()` what is "
    "kept for later, bound every cache, run evaluation under torch.no_grad(); "
    "torch.cuda.memory._record_memory_history() and a snapshot show which allocations stay"
)
CACHE_CAUSE = (
    "The tensors hold no more than before: PyTorch's caching allocator keeps blocks of every size it has "
    "served, and shapes that change from step to step (sequence lengths, dynamic batches, recompiled "
    "graphs) keep asking for new sizes. It gives the cache back only when an allocation fails — a "
    "cudaFree and a retry that stall the GPU — or runs out of memory where the blocks are fragmented"
)
CACHE_DECISION = (
    "Keep shapes steady: pad or bucket sequence lengths, fixed batch sizes, torch.compile(dynamic=True) "
    "for varying shapes; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets the allocator grow "
    "segments in place instead of caching blocks of each size"
)


def _slope(points: list[tuple[float, float]]) -> float:
    """Least-squares bytes per second."""
    n = len(points)
    mt = sum(t for t, _ in points) / n
    mb = sum(b for _, b in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    return sum((t - mt) * (b - mb) for t, b in points) / var if var else 0.0


def vram_growing(v: GpuVerdict, series: Windows, gpu: GpuStatic, started_s: float, ended_s: float) -> Finding | None:
    """The finding for one GPU, or None when its memory holds still (or the steady state is too short)."""
    steady_from, steady_to = started_s + v.startup_s, ended_s - v.shutdown_s
    steady = [w for w in series if steady_from <= w.t0_s and w.t1_s <= steady_to]
    points = [((w.t0_s + w.t1_s) / 2, w.used_max_bytes) for w in steady if w.used_max_bytes is not None]
    if len(points) < 4 or points[-1][0] - points[0][0] < GROWTH_MIN_S.value:
        return None
    rate = _slope(points)
    span_s = points[-1][0] - points[0][0]
    if rate * span_s < GROWTH_MIN.value * 2**20:
        return None
    half = len(points) // 2
    for part in (points[: half + 1], points[half:]):
        grown = part[-1][1] - part[0][1]
        if grown < HALF_SHARE.value * rate * (part[-1][0] - part[0][0]):
            return None
    last = points[-1][1]
    evidence: dict[str, float] = {
        "growth_mib_per_s": round(rate / 2**20, 1),
        "grown_mib": round(rate * span_s / 2**20),
        "steady_s": round(span_s, 1),
        "used_gib": round(last / 2**30, 1),
    }
    held = [
        ((w.t0_s + w.t1_s) / 2, w.allocator_allocated_bytes) for w in steady if w.allocator_allocated_bytes is not None
    ]
    cause = decision = None
    if len(held) >= len(points) // 2 and len(held) >= 4:
        held_rate = _slope(held)
        evidence["held_growth_mib_per_s"] = round(held_rate / 2**20, 1)
        leak = held_rate >= HELD_SHARE.value * rate
        cause, decision = (LEAK_CAUSE, LEAK_DECISION) if leak else (CACHE_CAUSE, CACHE_DECISION)
    full = ""
    if gpu.memory_total_bytes:
        to_full_s = max(0.0, gpu.memory_total_bytes - last) / rate
        evidence["full_in_s"] = round(to_full_s)
        full = f"; at this rate the GPU is full in {_duration(to_full_s)}"
    return VRAM_GROWING.finding(
        evidence,
        subject=f"gpu.{v.gpu}",
        cause=cause,
        decision=decision,
        symptom=f"GPU {v.gpu}: memory used grows {rate / 2**20:,.0f} MiB/s through the steady "
        f"state ({rate * span_s / 2**30:.1f} GiB in {span_s:.0f} s, "
        f"{last / 2**30:.1f} GiB now){full}",
    )


def _duration(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 2 * 3600:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"
