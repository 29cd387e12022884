"""GPU memory that grows through the steady state (`run.vram_growing`): a leak, or a cache without a
bound, found from the memory NVML says is used on the GPU, window by window.

A caching allocator grows while a workload warms up and then holds still: memory that keeps growing
after the start-up, at a steady rate, in both halves of the steady state, will fill the GPU. The
finding gives the rate, and when the GPU will be full at that rate. Where the workload reports its
allocator (a Python workload under `run`), what its tensors hold tells the two causes apart: held
bytes growing as fast are tensors kept (a leak); held bytes flat are the allocator's cache growing
with shapes that keep changing (it gives blocks back only when an allocation fails, with a cudaFree
and a retry that stall the GPU). Where the workload saved the allocator's snapshot while its live memory
grew (`run.snapshots`), the finding names the Python lines whose live bytes grew, and the snapshot.
"""

from __future__ import annotations

from typing import Any

from gputriage.diagnosis.memory.evidence import lines_text
from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RUN, RunEvidence
from gputriage.diagnosis.run.snapshots import Judged
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording
from gputriage.model.numbers import GIB, MIB, duration_text, half
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
MIN_WINDOWS = Threshold(
    "vram_growth_min_windows",
    4.0,
    "windows",
    "windows of the steady state (and, to tell a leak from the cache, of the allocator's report) a fitted rate "
    "needs, the allocator's reported in half the windows at least",
    "judgement, with run.vram_growing's first recordings (tests/fixtures/h200/runs_unseen6.json.gz: vram_leak, "
    "8 s loops): four 1 s windows are the fewest over which a slope is more than two points' difference",
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


def evaluate(ev: RunEvidence) -> list[Finding]:
    """Each GPU whose memory grew through a steady state long enough to tell (none for a command that failed
    before one)."""
    if not ev.steady:
        return []
    out = []
    for v in ev.verdicts.values():
        f = growing(v, ev.series(v.gpu), ev.static(v.gpu), ev.started_s, ev.ended_s, _of(ev.growth_snapshot, v.gpu))
        out += [f] if f is not None else []
    return out


def _of(snap: Judged | None, gpu: int) -> Judged | None:
    """The growth's snapshot where it is of this GPU and names lines that grew."""
    if snap is None or snap.gpu != gpu or snap.report is None or not snap.report.state.growth_lines:
        return None
    return snap


def growing(
    v: GpuVerdict, series: Windows, gpu: GpuStatic, started_s: float, ended_s: float, snap: Judged | None = None
) -> Finding | None:
    """The finding for one GPU, or None when its memory holds still (or the steady state is too short); `snap`: the
    allocator's snapshot of the growth, whose lines it names."""
    steady_from, steady_to = started_s + v.startup_s, ended_s - v.shutdown_s
    steady = [w for w in series if steady_from <= w.t0_s and w.t1_s <= steady_to]
    points = [((w.t0_s + w.t1_s) / 2, w.used_max_bytes) for w in steady if w.used_max_bytes is not None]
    if len(points) < MIN_WINDOWS.value or points[-1][0] - points[0][0] < GROWTH_MIN_S.value:
        return None
    rate = _slope(points)
    span_s = points[-1][0] - points[0][0]
    if rate * span_s < GROWTH_MIN.value * MIB:
        return None
    middle = half(len(points))
    for part in (points[: middle + 1], points[middle:]):
        grown = part[-1][1] - part[0][1]
        if grown < HALF_SHARE.value * rate * (part[-1][0] - part[0][0]):
            return None
    last = points[-1][1]
    evidence: dict[str, Any] = {
        "growth_mib_per_s": round(rate / MIB, 1),
        "grown_mib": round(rate * span_s / MIB),
        "steady_s": round(span_s, 1),
        "used_gib": round(last / GIB, 1),
    }
    held = [
        ((w.t0_s + w.t1_s) / 2, w.allocator_allocated_bytes) for w in steady if w.allocator_allocated_bytes is not None
    ]
    kind = "grows"
    if len(held) >= half(len(points)) and len(held) >= MIN_WINDOWS.value:
        held_rate = _slope(held)
        evidence["held_growth_mib_per_s"] = round(held_rate / MIB, 1)
        kind = "leak" if held_rate >= HELD_SHARE.value * rate else "cache"
    fill: dict[str, Any] = {"gpu": v.gpu, "rate_mib_per_s": rate / MIB, "grown_gib": rate * span_s / GIB}
    fill |= {"span_s": span_s, "used_gib": last / GIB}
    if gpu.memory_total_bytes:
        to_full_s = max(0.0, gpu.memory_total_bytes - last) / rate
        evidence["full_in_s"] = round(to_full_s)
        fill["full_in"] = duration_text(to_full_s)
    say = kind if gpu.memory_total_bytes else f"{kind}_no_total"
    if snap is not None:
        say += _lines(snap, evidence, fill)
    return RULE.finding(evidence, subject=f"gpu.{v.gpu}", say=say, fill=fill)


def _lines(snap: Judged, evidence: dict[str, Any], fill: dict[str, Any]) -> str:
    """The lines whose live bytes grew, and the snapshot, in the finding's figures and words: the wording's suffix."""
    assert snap.report is not None
    lines = snap.report.state.growth_lines
    evidence["lines_grown"] = [f"{ln.label}={round((ln.growth_bytes or 0) / MIB, 1)} MiB" for ln in lines[:5]]
    evidence["snapshot"] = fill["snapshot"] = snap.dump.snapshot
    fill["lines"] = lines_text(lines, growth=True)
    return "_lines"


DECISION = (
    "Run it under `gputriage run` (Python), which tells the two apart from the allocator's counters; "
    "torch.cuda.memory._record_memory_history() and a snapshot show which allocations stay"
)
GROWS = (
    "GPU {gpu}: memory used grows {rate_mib_per_s:,.0f} MiB/s through the steady state ({grown_gib:.1f} GiB in "
    "{span_s:.0f} s, {used_gib:.1f} GiB now)"
)
FULL = "; at this rate the GPU is full in {full_in}"
LINES = " — the lines whose live bytes grew: {lines}"
SNAPSHOT = "; the allocator's snapshot of the growth is kept: `gputriage memory {snapshot}` lists every line"
CAUSES = {"leak": (LEAK_CAUSE, LEAK_DECISION), "cache": (CACHE_CAUSE, CACHE_DECISION), "grows": ("", "")}
RULE = Rule(
    FindingSpec(
        id="run.vram_growing",
        step=3,
        severity=Severity.warn,
        commands=RUN,
        needs=("gpu",),
        symptom="GPU memory grows through the steady state",
        cause="Tensors kept on the GPU step after step (a leak), or a caching allocator whose cache grows with "
        "shapes that keep changing",
        decision=DECISION,
        condition="GPU memory used grows >= {vram_growth_min_mib:g} MiB over a steady state of "
        ">= {vram_growth_min_steady_s:g} s (and {vram_growth_min_windows:g} windows), at a fitted rate that each "
        "half of it shows at least {vram_growth_half_share:.0%} of",
        thresholds=(GROWTH_MIN, GROWTH_MIN_S, HALF_SHARE, HELD_SHARE, MIN_WINDOWS),
        # the allocator's report tells a leak from the cache; the GPU's size, when it will be full
        # and the workload's snapshot of the growth, the lines that hold it
        says={
            kind + total + lined: Wording(
                symptom=GROWS + full + (LINES if lined else ""),
                cause=cause,
                decision=(decision or DECISION) + SNAPSHOT if lined else decision,
            )
            for kind, (cause, decision) in CAUSES.items()
            for total, full in (("", FULL), ("_no_total", ""))
            for lined in ("", "_lines")
        },
    ),
    evaluate,
)
