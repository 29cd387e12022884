"""launch_bound: the host launches kernels shorter than their launches, on H200 recordings — small kernels that
cover most SMs with few warps, launching split between the main thread and autograd's, a server's worker thread,
and the advice for a loop whose syncs come first. (Which recorded cases get it: tests/fixtures/cases.toml.)"""

from __future__ import annotations

import json

from gputriage.diagnosis.run.classify import SMALL_KERNEL_OCC_PER_UTIL, label
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.run import GpuStatic
from gputriage.model.window import WindowMetrics
from recordings import FIXTURES, judged, runs

UNSEEN2 = runs("runs_unseen2.json.gz")
UNSEEN5 = runs("runs_unseen5.json.gz")
PIPES = runs("runs_pipes.json.gz")
ALLOCATOR = runs("runs_allocator.json.gz")


def test_an_ensemble_of_small_kernels_that_cover_most_sms_is_launch_bound_by_their_few_warps():
    # SM activity 0.6 of GPU-Util (over the 0.5 that says short kernels) but 1.8% occupancy at 48% GPU-Util:
    # each kernel holds a warp or two per SM; it was called sync_bound, and the trace said launch_bound
    for rec in (UNSEEN2["ensemble_small_gpm"], PIPES["ensemble_small"]):
        v = judged(rec).verdict.per_gpu["0"]
        e = v.evidence
        assert v.bottleneck == B.launch_bound and e["sm_active_pct"] >= 0.5 * e["util_pct"]
        assert e["sm_occupancy_pct"] < SMALL_KERNEL_OCC_PER_UTIL.value * e["util_pct"]
    sync = judged(PIPES["item_sync"]).verdict.per_gpu["0"]  # a .item() per layer: large kernels, many warps
    assert sync.bottleneck == B.sync_bound
    assert sync.evidence["sm_occupancy_pct"] >= SMALL_KERNEL_OCC_PER_UTIL.value * sync.evidence["util_pct"]


def test_a_launch_bound_loop_whose_launching_is_split_between_two_threads_is_launch_bound_live():
    # the main thread runs forward and optimizer (44-58% of a core), autograd's own thread the backward: no thread
    # at 85%, the process at 98-100%; the sampler said sync_bound and only a trace set it right
    for rec in (UNSEEN5["lstm_timesteps_gpm"], UNSEEN5["adam_foreach_off_gpm"], ALLOCATOR["lstm_timesteps_gpm"]):
        v = judged(rec).verdict.per_gpu["0"]
        e = v.evidence
        assert v.bottleneck == B.launch_bound, v.summary
        assert e["top_thread_pct"] < 85 <= e["gpu_process_cpu_pct"]
    sync = judged(PIPES["item_sync"]).verdict.per_gpu["0"]  # large kernels, a .item() per layer: still sync_bound
    assert sync.bottleneck == B.sync_bound


def test_a_moe_routed_by_nonzero_is_told_to_remove_its_syncs_before_capturing_graphs():
    report = judged(UNSEEN5["moe_nonzero_nogpm"])
    launch = next(f for f in report.findings if f.id == "trace.launch_bound")
    assert launch.decision.startswith("First remove the host synchronizations") and "aten::nonzero" in launch.decision


def test_a_busy_thread_beside_an_idle_main_thread_launching_small_kernels_stays_launch_bound():
    # a server whose requests run on a worker thread (the main thread runs its event loop): the readings of
    # `transformers serve` at concurrency 1 on the H200 (GPU-Util 14%, SM activity 3.1%, one thread at 97%),
    # with a main thread at 2% beside it: the thread that is busy launches, nothing makes input
    step = json.loads((FIXTURES / "load_transformers_serve_sweep.json").read_text())["steps"][0]
    g, p = step["gpus"][0], step["server_process"]
    m = WindowMetrics(
        t0_s=0.0,
        t1_s=1.0,
        util_pct=g["util_pct"],
        sm_active_pct=g["sm_active_pct"],
        workload_cpu_pct=p["cpu_pct"],
        gpu_process_cpu_pct=p["cpu_pct"],
        top_thread_pct=p["top_thread_pct"],
        gpu_main_thread_pct=2.0,
        read_mb_per_s=0.0,
        job_gpu_processes=1,
    )
    assert label(m, GpuStatic(memory_total_bytes=int(g["total_bytes"])))[0] == B.launch_bound
