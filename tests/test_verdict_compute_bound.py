"""compute_bound beyond bf16 GEMMs: int8 GEMMs judged against the INT8 rate and their old kernel named, on H200
recordings."""

from __future__ import annotations

from gputriage.model.bottleneck import Bottleneck as B
from recordings import judged, runs

FIRST6 = runs("runs_unseen6.json.gz")
AGAIN6 = runs("runs_unseen6_again.json.gz")


def test_int8_gemms_without_gpm_are_compute_bound_and_their_old_kernel_named():
    first = judged(FIRST6["int8_gemm_nogpm"])  # the trace then had no FLOPs for aten::_int_mm: memory_bound
    assert first.verdict.bottleneck == B.memory_bound
    again = judged(AGAIN6["int8_gemm_nogpm"])
    assert again.verdict.bottleneck == B.compute_bound
    slow = next(f for f in again.findings if f.id == "trace.slow_gemms")
    assert slow.evidence["built_for"].startswith("sm_80") and slow.evidence["achieved_tflops"] < 200
