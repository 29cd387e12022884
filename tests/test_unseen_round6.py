"""The sixth round of workloads written after the rules (examples/workloads/, the cause each should get committed
before the first run), recorded under `gputriage run` and `run --no-gpm` on an H200 (2026-12-02): their first
runs, then the same workloads and controls run again under the rules their misses taught."""

from __future__ import annotations

import pytest

from gputriage.diagnosis.bottlenecks import OTHER_THREAD_DECISION
from gputriage.diagnosis.run.classify import COPY_TIME_SHARE, copy_time_share
from gputriage.diagnosis.run.host_side import HOT_THREAD, MAIN_THREAD_WAITS
from gputriage.diagnosis.run.profile_gate import ProfileGate
from gputriage.diagnosis.run.vram_growth import CACHE_CAUSE, LEAK_CAUSE
from gputriage.model.bottleneck import Bottleneck as B
from recordings import judged, recorded, runs

FIRST = runs("runs_unseen6.json.gz")
AGAIN = runs("runs_unseen6_again.json.gz")


@pytest.mark.parametrize("name, expected", [
    ("cuda_graph_small", "underfilled"), ("cuda_graph_small_nogpm", "underfilled"),  # graph replays of 32x1024 GEMMs
    ("layer_left_on_cpu", "host_bound"), ("layer_left_on_cpu_nogpm", "host_bound"),  # an fp32 head on the CPU
    ("int8_gemm", "compute_bound"),  # SM activity 97% with GPM
    ("vram_leak", "compute_bound"), ("vram_leak_nogpm", "compute_bound"),  # the growth is a finding of its own
])
def test_the_first_runs_named_as_expected(name, expected):
    assert judged(FIRST[name]).verdict.bottleneck.value == expected


@pytest.mark.parametrize("name, expected", [
    ("gil_contention", "host_bound"), ("gil_contention_nogpm", "host_bound"),
    ("pin_every_step", "h2d_copy_bound"), ("pin_every_step_nogpm", "h2d_copy_bound"),
    ("int8_gemm_nogpm", "compute_bound"), ("vram_leak", "compute_bound"), ("recompile_shapes", "host_bound"),
    # controls, run the same hour: each keeps the cause it had
    ("item_sync", "sync_bound"), ("cpu_augment", "input_starved"), ("lstm_timesteps", "launch_bound"),
    ("workers_augment", "input_starved"), ("gpt_loop", "compute_bound"), ("healthy", "compute_bound"),
])
def test_run_again_under_the_rules_they_taught(name, expected):
    assert judged(AGAIN[name]).verdict.bottleneck.value == expected


def test_a_python_thread_holding_the_gil_is_told_from_the_training_thread_making_its_input():
    # the first runs had no main-thread figure: a thread at 99%, nothing read, the GPU idle read input_starved
    # (DataLoader advice) in both modes, and its trace said the same (the launching thread waits outside ops)
    assert judged(FIRST["gil_contention"]).verdict.bottleneck == B.input_starved
    for name in ("gil_contention", "gil_contention_nogpm"):
        report = judged(AGAIN[name])
        v = report.verdict.per_gpu["0"]
        e = v.evidence
        assert v.bottleneck == B.host_bound and v.decision == OTHER_THREAD_DECISION
        assert e["gpu_main_thread_pct"] < MAIN_THREAD_WAITS.value
        assert e["gpu_process_cpu_pct"] - e["gpu_main_thread_pct"] >= HOT_THREAD.value
        assert "beside the main one" in v.summary
        merged = report.verdict.merged
        assert merged is not None and merged.trace == B.input_starved and merged.bottleneck == B.host_bound
    assert not judged(AGAIN["gil_contention"]).verdict.per_gpu["0"].undecided_between  # decided with GPM
    # the training thread that makes its own input is the main one, busy: input_starved as before
    own = judged(AGAIN["cpu_augment"]).verdict.per_gpu["0"]
    assert own.bottleneck == B.input_starved and own.evidence["gpu_main_thread_pct"] >= 85
    # autograd's thread launching the backward beside a main thread at 40%: launch_bound, not this
    assert judged(AGAIN["lstm_timesteps"]).verdict.per_gpu["0"].evidence["gpu_main_thread_pct"] < 50


def test_a_loop_whose_gpu_reads_0_percent_is_profiled_once_it_reports_steps():
    # the host held the GIL so long that the GPU never reached 1% GPU-Util: --profile auto never saw it in use
    rec = recorded(FIRST["gil_contention_nogpm"])
    assert max(w.util_pct or 0.0 for w in rec.windows.series[0]) < 1.0
    gate = ProfileGate("auto", {0: rec.meta.gpus["0"]})
    asked = None
    for w in rec.windows.series[0]:
        gate.add(0, w)
        asked = asked or gate.first(w.t1_s)
    assert asked is not None and "host_bound" in asked


def test_pinned_copies_taking_turns_with_the_kernels_are_copy_bound_not_underfilled():
    # each 256 MiB batch pinned on the host, copied on the compute stream, then the GEMMs: GPU-Util 100%, SM
    # activity 37-45%; the first run read underfilled, its trace (no GPM) compute_bound beside 47.5% of copies
    for rec in (FIRST["pin_every_step"], AGAIN["pin_every_step"]):
        run = recorded(rec)
        v = judged(rec).verdict.per_gpu["0"]
        assert v.bottleneck == B.h2d_copy_bound and v.evidence["sm_active_pct"] < 50
        assert copy_time_share(v.evidence["pcie_rx_mib_per_s"], run.meta.gpus["0"]) >= COPY_TIME_SHARE.value
    report = judged(AGAIN["pin_every_step_nogpm"])  # without GPM the trace decides
    v = report.verdict.per_gpu["0"]
    assert v.bottleneck == B.compute_bound and B.h2d_copy_bound in v.undecided_between
    assert report.verdict.merged is not None and report.verdict.merged.trace == B.h2d_copy_bound
    copies = next(f for f in report.findings if f.id == "trace.h2d_copy_bound")
    assert copies.severity.value == "warn" and "side stream" in copies.decision


def test_int8_gemms_without_gpm_are_compute_bound_and_their_old_kernel_named():
    first = judged(FIRST["int8_gemm_nogpm"])  # the trace then had no FLOPs for aten::_int_mm: memory_bound
    assert first.verdict.bottleneck == B.memory_bound
    again = judged(AGAIN["int8_gemm_nogpm"])
    assert again.verdict.bottleneck == B.compute_bound
    slow = next(f for f in again.findings if f.id == "trace.slow_gemms")
    assert slow.evidence["built_for"].startswith("sm_80") and slow.evidence["achieved_tflops"] < 200


def test_growing_memory_is_a_leak_when_the_tensors_hold_it_and_the_cache_when_they_do_not():
    leak = next(f for f in judged(AGAIN["vram_leak"]).findings if f.id == "run.vram_growing")
    e = leak.evidence
    assert leak.cause == LEAK_CAUSE and abs(e["held_growth_mib_per_s"] - e["growth_mib_per_s"]) < 0.2 * e[
        "growth_mib_per_s"]
    # a block compiled for each new sequence length: NVML sees 37 MiB/s, the tensors hold 1 MiB/s more
    cache = next(f for f in judged(AGAIN["recompile_shapes"]).findings if f.id == "run.vram_growing")
    assert cache.cause == CACHE_CAUSE and cache.evidence["held_growth_mib_per_s"] < 0.1 * cache.evidence[
        "growth_mib_per_s"]
    for name in ("healthy", "gpt_loop", "item_sync", "workers_augment"):
        assert not any(f.id == "run.vram_growing" for f in judged(AGAIN[name]).findings), name


GALLERY = runs("runs_gallery_round6.json.gz")
GALLERY_EXPECTED = {"input_starved": "input_starved", "pageable_copy": "h2d_copy_bound", "launch_bound": "launch_bound",
                    "item_sync": "sync_bound", "fp32_no_tensor_cores": "tensor_cores_idle",
                    "unfused_elementwise": "memory_bound", "small_batch": "underfilled", "vram_churn": "vram_pressure",
                    "contended": "contended", "healthy": "compute_bound", "job_shares_gpu": "contended",
                    "host_stats": "host_bound", "cpu_optimizer": "host_bound", "gpt_loop": "compute_bound"}


@pytest.mark.parametrize("name", sorted(GALLERY_EXPECTED))
def test_the_gallery_run_under_this_rounds_rules_keeps_its_causes(name):
    report = judged(GALLERY[name])
    assert report.verdict.bottleneck.value == GALLERY_EXPECTED[name]
    assert not any(f.id == "run.vram_growing" for f in report.findings)


def test_an_unsure_trace_naming_a_cause_the_sampler_did_not_leave_open_does_not_settle_it():
    # host_stats under --profile auto: the profiler took 6.5 s to start and caught 77 ms before the loop ended,
    # mostly the copy of the activation to the host (confidence 0.17); the sampler had left host_bound or
    # sync_bound open, and the trace's h2d_copy_bound had overridden it
    rec = GALLERY["host_stats"]
    trace = rec["profile"]["trace"]["verdict"]
    assert trace["bottleneck"] == "h2d_copy_bound" and trace["confidence"] < 0.5
    merged = judged(rec).verdict.merged
    assert merged is not None and merged.bottleneck == B.host_bound and merged.trace == B.h2d_copy_bound
    assert "none of the causes the sampler left open" in merged.why
