"""vram_pressure: the GPU waits on the caching allocator (cudaFree/cudaMalloc) — busy tensor cores with the SMs
idle a fifth of the time leave the gaps to a trace, which sees the allocator — on H200 recordings."""

from __future__ import annotations

from gputriage.diagnosis.run.classify import SM_GAPS_PER_UTIL
from gputriage.model.bottleneck import Bottleneck as B
from recordings import judged, runs

UNSEEN4 = runs("runs_unseen4.json.gz")


def test_busy_tensor_cores_with_sms_idle_a_fifth_of_the_time_leave_the_gaps_to_a_trace():
    # empty_cache() after every step: GPU-Util 99% but SM activity 74%; decided compute_bound, it hid a 1.26x loss
    # (455 against 575 TFLOP/s without it, median of 3 alternated runs); the trace sees the GPU wait on the allocator
    unprofiled = judged(UNSEEN4["empty_cache_loop_unprofiled_gpm"]).verdict.per_gpu["0"]
    e = unprofiled.evidence
    assert unprofiled.bottleneck == B.compute_bound and B.underfilled in unprofiled.undecided_between
    assert e["sm_active_pct"] < SM_GAPS_PER_UTIL.value * e["util_pct"] and e["tensor_active_pct"] >= 30
    profiled = judged(UNSEEN4["empty_cache_loop_gpm"])
    assert "underfilled" in profiled.profile.asked[0]
    assert profiled.verdict.bottleneck == B.vram_pressure and profiled.verdict.merged.trace == B.vram_pressure
    alloc = [f for f in profiled.findings if f.id == "trace.vram_pressure"]
    assert alloc and "cudaMalloc/cudaFree" in alloc[0].symptom
    for name in ("empty_cache_keep_gpm", "healthy_gpm", "prefetch_pinned_gpm", "fp8_gemm_gpm"):  # SMs >= 0.9
        v = judged(UNSEEN4[name]).verdict.per_gpu["0"]
        assert v.bottleneck == B.compute_bound and v.undecided_between == [], name
        assert v.evidence["sm_active_pct"] >= SM_GAPS_PER_UTIL.value * v.evidence["util_pct"]
