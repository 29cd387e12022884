"""Another process on the workload's GPU: contention when its kernels take the GPU's time, not when it only holds
memory (recorded on an H200: a bf16 GEMM loop under `gputriage run` beside a process holding 20 GiB idle)."""

from __future__ import annotations

from recordings import judged, runs


def test_a_neighbour_holding_memory_idle_does_not_make_the_job_contended() -> None:
    rec = runs("runs_regime_shift.json.gz")["healthy_beside_idle_holder"]
    held = [n for s in rec["samples"] for n in (s.get("neighbours") or []) if n["used_bytes"] > 20 << 30]
    idle = [n for n in held if n["sm_util_pct"] == 0.0]
    assert len(idle) > 0.9 * len(held)  # it wrote its 20 GiB once, at the start, then computed nothing
    assert judged(rec).verdict.bottleneck.value == "compute_bound"


def test_a_neighbour_whose_kernels_run_makes_it_contended() -> None:
    """The gallery's contended loop: a neighbour's GEMMs time-sliced in (recorded before per-process utilization was
    sampled: a neighbour of unknown use still counts)."""
    rec = runs("runs_typed.json.gz")["contended"]
    assert judged(rec).verdict.bottleneck.value == "contended"
