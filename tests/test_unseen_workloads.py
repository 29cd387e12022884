"""Workloads written after the rules (copies of examples/workloads/ run from another folder), recorded under
`gputriage run` and `run --no-gpm` on an H200 (2026-12-01), and the rules they taught: replayed to the verdict
each one should get."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import msgspec
import pytest

from gputriage.diagnosis.bottlenecks import MEMORY_LATENCY
from gputriage.diagnosis.run.classify import CUDA_MATH_BUSY, SMALL_KERNEL_OCC_PER_UTIL
from gputriage.diagnosis.run.judge import judge
from gputriage.diagnosis.run.profile_gate import ProfileGate
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.run import RunMeta
from gputriage.model.sample import Sample
from gputriage.sampling.session import replay
from recordings import judged, recorded

FIXTURES = Path(__file__).parent / "fixtures" / "h200"
UNSEEN = json.loads(gzip.decompress((FIXTURES / "runs_unseen2.json.gz").read_bytes()))
PIPES = json.loads(gzip.decompress((FIXTURES / "runs_pipes.json.gz").read_bytes()))


@pytest.mark.parametrize("name, expected", [
    ("decode_small_kv_gpm", "launch_bound"),  # eager decode, batch 4: ~200 small kernels a token
    ("checkpoint_often_gpm", "host_bound"), ("checkpoint_often_nogpm", "host_bound"),  # 1.6 GB torch.save / 10 steps
    ("files_loader_gpm", "input_starved"), ("files_loader_nogpm", "input_starved"),  # 2 workers decoding .npy
    ("long_attention_gpm", "compute_bound"), ("long_attention_nogpm", "compute_bound"),  # 8k-token SDPA
    ("fp16_gradscaler_gpm", "compute_bound"), ("fp16_gradscaler_nogpm", "compute_bound"),  # a sync per step, cheap
    ("ensemble_small_gpm", "launch_bound"), ("ensemble_small_nogpm", "launch_bound"),  # 64 small MLPs one by one
    ("cpu_postprocess_gpm", "host_bound"), ("cpu_postprocess_nogpm", "host_bound"),  # numpy NMS on the boxes
    ("embedding_lookup_nogpm", "memory_bound"),  # the trace's: embedding bags
])
def test_workloads_written_after_the_rules_get_their_cause(name, expected):
    assert judged(UNSEEN[name]).verdict.bottleneck.value == expected


def test_an_ensemble_of_small_kernels_that_cover_most_sms_is_launch_bound_by_their_few_warps():
    # SM activity 0.6 of GPU-Util (over the 0.5 that says short kernels) but 1.8% occupancy at 48% GPU-Util:
    # each kernel holds a warp or two per SM; it was called sync_bound, and the trace said launch_bound
    for rec in (UNSEEN["ensemble_small_gpm"], PIPES["ensemble_small"]):
        v = judged(rec).verdict.per_gpu["0"]
        e = v.evidence
        assert v.bottleneck == B.launch_bound and e["sm_active_pct"] >= 0.5 * e["util_pct"]
        assert e["sm_occupancy_pct"] < SMALL_KERNEL_OCC_PER_UTIL.value * e["util_pct"]
    sync = judged(PIPES["item_sync"]).verdict.per_gpu["0"]  # a .item() per layer: large kernels, many warps
    assert sync.bottleneck == B.sync_bound
    assert sync.evidence["sm_occupancy_pct"] >= SMALL_KERNEL_OCC_PER_UTIL.value * sync.evidence["util_pct"]


def test_busy_sms_without_math_on_any_pipe_wait_on_memory_not_on_cuda_cores():
    # embedding-bag lookups: SMs 93% busy, tensor pipes 2%, DRAM 25% — recorded before the math pipes were
    # read it was tensor_cores_idle; with them, 1.4% of CUDA-core math against fp32 GEMMs' 77%
    before = judged(UNSEEN["embedding_lookup_gpm"]).verdict.per_gpu["0"]
    assert before.bottleneck == B.tensor_cores_idle and "cuda_math_active_pct" not in before.evidence
    gather = judged(PIPES["embedding_lookup"]).verdict.per_gpu["0"]
    assert gather.bottleneck == B.memory_bound and gather.evidence["cuda_math_active_pct"] < CUDA_MATH_BUSY.value
    assert gather.evidence["dram_active_pct"] < 60 and "memory latency" in gather.summary
    assert gather.decision == MEMORY_LATENCY
    fp32 = judged(PIPES["fp32_no_tensor_cores"]).verdict.per_gpu["0"]
    assert fp32.bottleneck == B.tensor_cores_idle and fp32.evidence["cuda_math_active_pct"] >= 60
    assert "CUDA-core math" in fp32.summary
    for name in ("unfused_elementwise", "decode_gemv"):  # bandwidth-bound: the usual memory_bound advice
        v = judged(PIPES[name]).verdict.per_gpu["0"]
        assert v.bottleneck == B.memory_bound and v.decision != MEMORY_LATENCY


def test_a_window_profiled_in_the_warm_up_does_not_decide_and_the_gate_asks_again_after_the_first_step():
    # eager decode under --no-gpm: the gate asked at +10 s, in the 18 s first generate() (cuDNN building its
    # attention plans, GPU-Util 2%); its trace said host_bound (time inside scaled_dot_product_attention)
    rec = UNSEEN["decode_small_kv_nogpm"]
    report = judged(rec)
    assert report.verdict.profiler_effect.in_startup and report.verdict.bottleneck == B.input_starved
    assert "start-up" in report.verdict.merged.why and report.verdict.merged.trace == B.host_bound
    run = recorded(rec)
    window = tuple(rec["profile"]["window_s"])
    gate = ProfileGate("auto", {0: run.meta.gpus["0"]})
    late = None
    for w in run.windows.series[0]:
        gate.add(0, w)
        gate.first(w.t1_s)
        if w.t0_s > window[1] and not gate.profiled:
            assert gate.again(window) is None  # like the warm-up it was asked in
        late = late or gate.late()
    assert gate.first_step_s is not None and late is not None and "first reported step" in late
    assert gate.asked == 2 and gate.late() is None  # once
    # live with that rule (the same script, 20 s): the second window, in the steady run, says launch_bound
    again = PIPES["decode_small_kv_nogpm"]
    assert any("first reported step" in r for r in again["profile"]["asked"])
    assert judged(again).verdict.bottleneck == B.launch_bound


def test_a_loop_that_saves_checkpoints_while_the_gpu_waits_is_told_to_save_less_often_or_off_the_loop():
    from gputriage.diagnosis.bottlenecks import HOST_WRITES_DECISION
    from gputriage.diagnosis.run.host_side import HOST_WRITES

    for name in ("checkpoint_often_gpm", "checkpoint_often_nogpm"):  # 1.6 GB torch.save every 10 steps
        v = judged(UNSEEN[name]).verdict.per_gpu["0"]
        assert v.bottleneck == B.host_bound and v.evidence["write_mb_per_s"] >= HOST_WRITES.value
        assert "to storage" in v.summary and v.decision == HOST_WRITES_DECISION
    numpy = judged(UNSEEN["cpu_postprocess_gpm"]).verdict.per_gpu["0"]  # host work on results, nothing written
    assert numpy.bottleneck == B.host_bound and numpy.decision != HOST_WRITES_DECISION
    assert numpy.evidence.get("write_mb_per_s", 0.0) < 1


HELPERS = json.loads(gzip.decompress((FIXTURES / "runs_helpers.json.gz").read_bytes()))


def test_dataloader_workers_busy_while_the_gpu_waits_are_its_input_not_host_computation():
    # 4 workers augmenting in-memory images: 340% of a core in the workers, 8% in the training process. By the
    # whole tree's CPU it was host computation; by the processes holding the GPU context, the input
    from gputriage.diagnosis.bottlenecks import INPUT_WORKERS_DECISION

    for name in ("workers_augment_gpm", "workers_augment_nogpm"):
        rec = HELPERS[name]
        v = judged(rec).verdict.per_gpu["0"]
        assert v.bottleneck == B.input_starved and v.decision == INPUT_WORKERS_DECISION
        assert v.undecided_between == []  # the training process sleeps (8%): it is not spinning in a sync
        assert v.evidence["workload_cpu_pct"] - v.evidence["gpu_process_cpu_pct"] >= 250
        assert "DataLoader workers" in v.summary and v.evidence["read_mb_per_s"] < 1
        blind = [msgspec.convert(s, Sample) for s in rec["samples"]]  # as a container that hides host pids sees it
        for s in blind:
            if s.workload is not None:
                s.workload.gpu_process_cpu_pct = None
        old = judge(replay(blind, msgspec.convert(rec["meta"], RunMeta)), 0).verdict.per_gpu["0"]
        assert old.bottleneck == B.host_bound
    # the CPU of the process on the GPU itself still says host computation, and idle workers say nothing
    expected = {"cpu_optimizer": B.host_bound, "host_stats": B.host_bound, "gpt_loop": B.compute_bound,
                "input_starved": B.input_starved}
    for name, b in expected.items():
        v = judged(HELPERS[name]).verdict.per_gpu["0"]
        assert v.bottleneck == b and v.decision != INPUT_WORKERS_DECISION, name
    assert judged(HELPERS["cpu_optimizer"]).verdict.per_gpu["0"].evidence["gpu_process_cpu_pct"] >= 250


def test_the_report_says_how_much_cpu_the_processes_on_the_gpu_took_and_what_the_workload_wrote():
    import io

    from rich.console import Console

    from gputriage.report import run_terminal
    from gputriage.report.html import render_html

    for rec, said in ((HELPERS["workers_augment_gpm"], "in the processes on the GPU"),
                      (UNSEEN["checkpoint_often_gpm"], "writes")):
        report = judged(rec)
        console = Console(file=io.StringIO(), width=160)
        run_terminal.render(report, console)
        host = [line for line in console.file.getvalue().splitlines() if line.startswith("host:")][0]
        assert said in host
        assert said in render_html(report)


def test_the_sampler_reads_the_cpu_of_the_processes_on_the_gpu_apart_from_their_helpers():
    import os
    import subprocess
    import sys
    import time

    from gputriage.sampling.sampler import ProcessTreeReader
    from gputriage.testing.stream_nvml import StreamNvml

    scenarios = json.loads((FIXTURES / "scenario_samples.json").read_text())

    class OnGpu(StreamNvml):  # this process holds the GPU context; its child does not
        def call(self, fn, index=None, *args):
            if fn == "nvmlDeviceGetComputeRunningProcesses":
                return [{"pid": os.getpid(), "usedGpuMemory": 1 << 30}]
            return super().call(fn, index, *args)

    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        reader = ProcessTreeReader(os.getpid(), OnGpu(scenarios["healthy_bf16"]["samples"]), [0], every=1)
        reader.read()
        time.sleep(1.0)
        w = reader.read()
    finally:
        child.kill()
        child.wait()
    assert w.gpu_process_cpu_pct is not None and w.gpu_process_cpu_pct < 30  # the test process sleeps
    assert w.cpu_pct - w.gpu_process_cpu_pct >= 30  # its child spins (on a shared core, at least a third of it)


UNSEEN3 = json.loads(gzip.decompress((FIXTURES / "runs_unseen3.json.gz").read_bytes()))


@pytest.mark.parametrize("name, expected", [
    ("offload_layers_gpm", "h2d_copy_bound"), ("offload_layers_nogpm", "h2d_copy_bound"),  # pageable weights, 8 GB/s
    ("d2h_features_gpm", "host_bound"),  # 268 MB of features read back per batch: the sampler's host-side view
    ("d2h_features_nogpm", "h2d_copy_bound"),  # the trace's: 95% of the window in pageable device-to-host copies
    ("resnet_batch1_gpm", "launch_bound"), ("resnet_batch1_nogpm", "launch_bound"),
    ("tf32_training_gpm", "compute_bound"), ("tf32_training_nogpm", "compute_bound"),  # TF32 runs on tensor cores
    ("sparse_requests_gpm", "idle"), ("sparse_requests_nogpm", "idle"),  # a request every 40 ms, 1 ms of work each
])
def test_workloads_written_last_get_their_cause(name, expected):
    assert judged(UNSEEN3[name]).verdict.bottleneck.value == expected


def test_copies_read_back_from_the_gpu_get_the_advice_for_reading_back_not_for_input():
    from gputriage.api import analyze_trace
    from gputriage.diagnosis.bottlenecks import D2H_COPY_DECISION
    from gputriage.diagnosis.trace.findings import findings
    from gputriage.diagnosis.trace.verdict import decide
    from gputriage.model.trace import RankAnalysis

    rank = msgspec.convert(UNSEEN3["d2h_features_nogpm"]["profile"]["trace"]["ranks"][0], RankAnalysis)
    v = decide(rank.anatomy[0])
    assert v.bottleneck == B.h2d_copy_bound and v.decision == D2H_COPY_DECISION
    copies = [f for f in findings(rank, v) if f.id == "trace.h2d_copy_bound"]
    assert copies and copies[0].decision == D2H_COPY_DECISION and copies[0].evidence["d2h_pct"] >= 90
    h2d = analyze_trace([FIXTURES / "traces" / "run_profile_pageable_copy.json.gz"])  # input sent to the GPU
    assert h2d.verdict.bottleneck == B.h2d_copy_bound and h2d.verdict.decision != D2H_COPY_DECISION


UNSEEN4 = json.loads(gzip.decompress((FIXTURES / "runs_unseen4.json.gz").read_bytes()))


@pytest.mark.parametrize("name, expected", [
    ("prefetch_pinned_gpm", "compute_bound"), ("prefetch_pinned_nogpm", "compute_bound"),  # 1.7 GB/s pinned, hidden
    ("fp8_gemm_gpm", "compute_bound"), ("fp8_gemm_nogpm", "compute_bound"),  # _scaled_mm, tensor pipes 92%
    ("scatter_messages_gpm", "memory_bound"), ("scatter_messages_nogpm", "memory_bound"),  # gathers, index_add_
    ("kv_decode_batch_gpm", "memory_bound"), ("kv_decode_batch_nogpm", "memory_bound"),  # KV cache at 4.4 TB/s
    ("empty_cache_loop_gpm", "vram_pressure"),  # profiled: the GPU idle 23% of the window after cudaFree/cudaMalloc
    ("empty_cache_keep_gpm", "compute_bound"),  # the same loop without empty_cache(): 1.26x faster
    ("recompile_shapes_long_gpm", "host_bound"), ("recompile_shapes_nogpm", "host_bound"),  # the trace: compiling
    ("healthy_gpm", "compute_bound"), ("small_batch_fixed_gpm", "compute_bound"),
])
def test_workloads_written_after_every_rule_get_their_cause(name, expected):
    assert judged(UNSEEN4[name]).verdict.bottleneck.value == expected


def test_a_command_that_fails_before_a_steady_state_gets_no_verdict():
    # the first fp8_gemm.py and scatter_messages.py died after 3-4 s (a TypeError in the script): the sampler had
    # called them idle and input_starved, with advice for a job that never ran
    from gputriage.diagnosis.run.judge import FAILED_EARLY_S

    for name in ("fp8_crashed_gpm", "scatter_crashed_nogpm"):
        rec = UNSEEN4[name]
        report = judged(rec)
        assert rec["exit_code"] == 1 and report.verdict.bottleneck is None
        v = report.verdict.per_gpu["0"]
        assert v.summary.startswith("no verdict: the command failed (exit 1) after") and not v.decision
        assert not [f for f in report.findings if f.id.startswith("run.") and f.id != "run.job_shares_gpu"]
        assert judge(recorded(rec), 0).verdict.bottleneck is not None  # the same samples, exit 0: judged
        assert judge(recorded(rec), 130).verdict.bottleneck is not None  # stopped by Ctrl-C: judged
    long = UNSEEN4["healthy_gpm"]  # a failure after a steady run (an OOM an hour in) keeps its verdict
    assert recorded(long).ended_s - recorded(long).started_s >= FAILED_EARLY_S
    assert judge(recorded(long), 1).verdict.bottleneck == B.compute_bound


def test_busy_tensor_cores_with_sms_idle_a_fifth_of_the_time_leave_the_gaps_to_a_trace():
    # empty_cache() after every step: GPU-Util 99% but SM activity 74%; decided compute_bound, it hid a 1.26x loss
    # (455 against 575 TFLOP/s without it, median of 3 alternated runs); the trace sees the GPU wait on the allocator
    from gputriage.diagnosis.run.classify import SM_GAPS_PER_UTIL

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


def test_a_loop_that_reports_steps_while_the_gpu_barely_computes_is_steady_from_its_first_step():
    # recompile_shapes: a new sequence length compiled at every step, GPU-Util 1%. The steady state began at the
    # first reported step (+15 s), not when the GPU first reached 5% (+24 s): the window profiled at +23 s is in
    # the steady run, and its trace (host_bound: the host compiles) decides
    # (live, both runs said input_starved: their windows counted as start-up)
    for name, first_step_s in (("recompile_shapes_long_gpm", 15.2), ("recompile_shapes_cold_gpm", 19.2)):
        rec = UNSEEN4[name]
        report = judged(rec)
        v = report.verdict.per_gpu["0"]
        effect = report.verdict.profiler_effect  # None when no 1 s window has its middle inside the profiled 0.9 s
        assert v.startup_s == first_step_s and (effect is None or not effect.in_startup)
        assert report.verdict.bottleneck == B.host_bound and report.verdict.merged.trace == B.host_bound
        assert rec["verdict"] == "input_starved" and v.evidence["util_pct"] <= 1


AUTO = json.loads(gzip.decompress((FIXTURES / "runs_auto.json.gz").read_bytes()))
GALLERY = {"input_starved": "input_starved", "pageable_copy": "h2d_copy_bound", "launch_bound": "launch_bound",
           "item_sync": "sync_bound", "fp32_no_tensor_cores": "tensor_cores_idle",
           "unfused_elementwise": "memory_bound", "small_batch": "underfilled", "vram_churn": "vram_pressure",
           "contended": "contended", "healthy": "compute_bound", "job_shares_gpu": "contended",
           "host_stats": "host_bound", "cpu_optimizer": "host_bound", "gpt_loop": "compute_bound",
           "input_starved_fixed": "compute_bound", "launch_bound_fixed": "compute_bound",
           "cpu_optimizer_fixed": "compute_bound", "gpt_loop_fixed": "compute_bound", "recompile_shapes": "host_bound"}


def test_under_the_default_auto_the_gallery_is_profiled_only_where_the_sampler_left_causes_open():
    profiled = []
    for name, expected in GALLERY.items():
        rec = AUTO[name]
        report = judged(rec)
        assert report.verdict.bottleneck.value == expected == rec["merged"], name  # as the live report said
        v = report.verdict.per_gpu["0"]
        assert rec["profile"]["mode"] == "auto" and bool(rec["profile"].get("asked")) == bool(v.undecided_between)
        if v.undecided_between:
            profiled.append(name)
            assert report.verdict.merged.trace.value == expected, name  # each trace agreed with the sampler's lead
    # the host-side causes the counters cannot separate, and the recompiles (the steady state from the first step)
    assert sorted(profiled) == ["cpu_optimizer", "host_stats", "input_starved", "item_sync", "launch_bound",
                                "recompile_shapes"]


UNSEEN5 = json.loads(gzip.decompress((FIXTURES / "runs_unseen5.json.gz").read_bytes()))
ALLOCATOR = json.loads(gzip.decompress((FIXTURES / "runs_allocator.json.gz").read_bytes()))


@pytest.mark.parametrize("name, expected", [
    ("lstm_timesteps_gpm", "launch_bound"), ("lstm_timesteps_nogpm", "launch_bound"),  # LSTMCell x 256 steps
    ("adam_foreach_off_gpm", "launch_bound"), ("adam_foreach_off_nogpm", "launch_bound"),  # 576 tensors one by one
    ("fp64_solver_gpm", "compute_bound"),  # DMMA: tensor pipes 97%
    ("python_tokenize_gpm", "input_starved"), ("python_tokenize_nogpm", "input_starved"),  # regex + dict lookups
    # expected sync_bound (a nonzero() per expert); the trace: 80% of the window waiting on launches of 2 µs
    # kernels, 9% after the 47 syncs: launch-bound, with the advice to remove the syncs first
    ("moe_nonzero_gpm", "launch_bound"), ("moe_nonzero_nogpm", "launch_bound"),
])
def test_the_fifth_round_of_workloads_gets_its_cause(name, expected):
    assert judged(UNSEEN5[name]).verdict.bottleneck.value == expected


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


def test_the_steady_state_of_a_step_reporting_workload_ends_with_its_last_step():
    # an 8 s loop held 7 s by the profiler: after the window, the loop was over and the process exiting (GPU idle,
    # a thread busy); those windows were counted as input_starved, half the steady state
    v = judged(ALLOCATOR["adam_foreach_off_gpm"]).verdict.per_gpu["0"]
    assert v.bottleneck == B.launch_bound and v.shares == {"launch_bound": 1.0}
    assert v.timeline[-1].regime == "shut-down"
