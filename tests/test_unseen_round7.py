"""The seventh round: two workloads written after the sixth round's rules (examples/workloads/, the cause each
should get committed before either ran), recorded once under `gputriage run` and `run --no-gpm` on an H200
(2026-12-02), and the rules their first runs taught, replayed."""

from __future__ import annotations

import pytest

from gputriage import api
from gputriage.diagnosis.run.classify import COPY_TIME_SHARE, copy_time_share
from gputriage.diagnosis.run.host_side import HOST_READS_BACK, MAIN_THREAD_WAITS, reads_back
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.trace.kernel_kinds import ELEMENTWISE, GEMM_TC, kind_of_kernel
from recordings import FIXTURES, judged, recorded, runs

RUNS = runs("runs_unseen7.json.gz")
ROUND6 = runs("runs_unseen6_again.json.gz")
GALLERY = runs("runs_gallery_round6.json.gz")


@pytest.mark.parametrize("name, expected", [
    ("triton_small_grid", "underfilled"), ("triton_small_grid_nogpm", "underfilled"),  # 8 programs: SM activity 6%
    ("loader_pin_thread", "input_starved"), ("loader_pin_thread_nogpm", "input_starved"),
])
def test_the_seventh_round_gets_its_cause(name, expected):
    assert judged(RUNS[name]).verdict.bottleneck.value == expected


def test_a_dataloader_whose_pinned_batches_cross_the_link_quickly_is_input_starved_not_copy_bound():
    # live with GPM it read h2d_copy_bound: PCIe RX 2 GB/s with the SMs idle; but pinned batches of 192 MiB cross
    # in 4 ms, 4% of the time, while 4 workers ran on 3.6 cores and the pin-memory thread at 98% beside a main
    # thread at 3% (the trace: copies 3.9% of the window, the host 94%)
    rec = RUNS["loader_pin_thread"]
    assert rec["verdict"] == "h2d_copy_bound"  # as the report said live
    run = recorded(rec)
    v = judged(rec).verdict.per_gpu["0"]
    e = v.evidence
    assert v.bottleneck == B.input_starved and "DataLoader workers" in v.summary
    assert copy_time_share(e["pcie_rx_mib_per_s"], run.meta.gpus["0"]) < COPY_TIME_SHARE.value
    assert e["gpu_main_thread_pct"] < MAIN_THREAD_WAITS.value <= e["top_thread_pct"]
    # its TX is the copies' own read requests (6% of RX), not data read back
    assert e["pcie_tx_mib_per_s"] >= HOST_READS_BACK.value > reads_back(e["pcie_tx_mib_per_s"],
                                                                       e["pcie_rx_mib_per_s"])
    # a pageable copy loop, whose copies are the time, stays copy-bound
    assert judged(GALLERY["pageable_copy"]).verdict.bottleneck == B.h2d_copy_bound


def test_data_read_back_is_told_from_the_read_requests_of_copies_to_the_gpu():
    host_stats = judged(GALLERY["host_stats"]).verdict.per_gpu["0"].evidence  # numpy on an activation read back
    assert reads_back(host_stats["pcie_tx_mib_per_s"], host_stats["pcie_rx_mib_per_s"]) >= HOST_READS_BACK.value
    pinned = judged(ROUND6["pin_every_step"]).verdict.per_gpu["0"].evidence  # 18.8 GB/s sent, nothing read back
    assert pinned["pcie_tx_mib_per_s"] > 1000 and reads_back(pinned["pcie_tx_mib_per_s"],
                                                             pinned["pcie_rx_mib_per_s"]) < HOST_READS_BACK.value


def test_the_loaders_trace_is_input_starved_and_a_layout_kernel_is_no_slow_gemm():
    # cuDNN's nchwToNhwcKernel (bf16) was counted as a tensor-core GEMM at "0 TFLOP/s": a slow-GEMM warning
    r = api.analyze_trace([FIXTURES / "traces" / "loader_pin_thread.json.gz"])
    assert r.verdict is not None and r.verdict.bottleneck == B.input_starved
    assert "trace.slow_gemms" not in [f.id for f in r.findings]
    layout = next(k for k in r.ranks[0].kernels if "nchwToNhwc" in k.name)
    assert layout.kind == ELEMENTWISE and kind_of_kernel(layout.name, "c10::BFloat16") == ELEMENTWISE
    assert kind_of_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64") == GEMM_TC


def test_a_busy_thread_beside_an_idle_main_thread_launching_small_kernels_stays_launch_bound():
    # a server whose requests run on a worker thread (the main thread runs its event loop): the readings of
    # `transformers serve` at concurrency 1 on the H200 (GPU-Util 14%, SM activity 3.1%, one thread at 97%),
    # with a main thread at 2% beside it: the thread that is busy launches, nothing makes input
    import json

    from gputriage.diagnosis.run.classify import label
    from gputriage.model.run import GpuStatic
    from gputriage.model.window import WindowMetrics

    step = json.loads((FIXTURES / "load_transformers_serve_sweep.json").read_text())["steps"][0]
    g, p = step["gpus"][0], step["server_process"]
    m = WindowMetrics(t0_s=0.0, t1_s=1.0, util_pct=g["util_pct"], sm_active_pct=g["sm_active_pct"],
                      workload_cpu_pct=p["cpu_pct"], gpu_process_cpu_pct=p["cpu_pct"],
                      top_thread_pct=p["top_thread_pct"], gpu_main_thread_pct=2.0, read_mb_per_s=0.0,
                      job_gpu_processes=1)
    assert label(m, GpuStatic(memory_total_bytes=int(g["total_bytes"])))[0] == B.launch_bound
