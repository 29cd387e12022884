"""A busy GPU whose tensor-core GEMMs take turns with memory-bound kernels (eager training: unfused norms, dropout,
residual adds): GPM's counters see SMs busy with quiet math pipes and DRAM streaming, leave memory_bound open and
advise fusing; a trace replaces compute_bound with memory_bound only where those kernels clearly lead (H200
recordings)."""

from __future__ import annotations

from gputriage.diagnosis.bottlenecks import COMPUTE_OFF_TENSOR_CORES, COMPUTE_WITH_MEMORY, DECISIONS
from gputriage.diagnosis.run.classify import DRAM_MIXED, takes_turns
from gputriage.diagnosis.run.merge import KERNEL_LEAD, kernels_settle
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.trace import TraceVerdict
from recordings import judged, runs

MODES = runs("runs_host_side_modes.json.gz")
AUTO = runs("runs_auto.json.gz")
FIRST6 = runs("runs_unseen6.json.gz")


def test_bert_training_with_gpm_leaves_memory_bound_open_and_advises_fusing():
    # SM 89%, tensor pipes 29.5%, CUDA-core math 3%, DRAM 40% of peak, at the power limit
    for mode in ("default", "no_profile"):
        v = judged(MODES[f"bert_large_train.{mode}"]).verdict.per_gpu["0"]
        assert v.bottleneck == B.compute_bound and v.undecided_between == [B.compute_bound, B.memory_bound]
        assert v.evidence["dram_active_pct"] >= DRAM_MIXED.value and v.decision == COMPUTE_WITH_MEMORY


def test_its_trace_without_gpm_splits_the_time_nearly_evenly_and_the_samplers_verdict_stands():
    report = judged(MODES["bert_large_train.no_gpm"])
    busy = MODES["bert_large_train.no_gpm"]["profile"]["trace"]["ranks"][0]["anatomy"][0]["busy"]
    gemm = busy["gemm_tensor_core"]["pct"] + busy["attention"]["pct"]
    assert busy["elementwise_reduction"]["pct"] > gemm > 40  # 48.2% against 43.5%: a near tie
    assert report.verdict.bottleneck == B.compute_bound and report.verdict.merged.trace == B.memory_bound
    assert "does not lead" in report.verdict.merged.why
    assert "trace.memory_bound" in {f.id for f in report.findings}  # the elementwise kernels stay named


def test_gemm_led_loops_keep_compute_bound_without_memory_bound_open():
    # a GEMM loop streams little (DRAM 17%); an int8 GEMM loop 2.6%; a loop at tensor pipes >= 30% is healthy
    for rec in (AUTO["healthy"], AUTO["launch_bound_fixed"], AUTO["cpu_optimizer_fixed"], FIRST6["int8_gemm"]):
        v = judged(rec).verdict.per_gpu["0"]
        assert v.bottleneck == B.compute_bound and B.memory_bound not in v.undecided_between
        assert v.decision in (DECISIONS[B.compute_bound], COMPUTE_OFF_TENSOR_CORES)


def test_fp32_math_on_cuda_cores_is_not_a_mix_with_memory():
    assert takes_turns(24.9, 47.0, 3.9) and not takes_turns(24.9, 47.0, 76.7) and not takes_turns(93.7, 17.5, 0.0)
    assert not takes_turns(1.6, 48.2, 0.0)  # NCCL's all-reduce streams memory with no GEMM beside it: no mix
    assert not takes_turns(None, None, None)


LIVE = runs("runs_gemms_and_memory.json.gz")
GALLERY = runs("runs_gallery_live.json.gz")


def test_live_the_default_mode_profiles_the_mix_and_a_near_tie_leaves_compute_bound_with_the_advice_to_fuse():
    for key in ("bert_large_train.default", "bert_large_train.default_2", "bert_large_train.default_3"):
        rec = LIVE[key]
        assert any("compute_bound or memory_bound" in a for a in rec["profile"]["asked"]), key
        assert rec["merged"] == "memory_bound"  # live, before a trace needed a clear lead to replace the sampler
        shares = rec["profile"]["trace"]["verdict"]["shares_pct"]
        assert shares["memory_bound"] > shares["compute_bound"] > shares["memory_bound"] / KERNEL_LEAD.value, key
        report = judged(rec)
        assert report.verdict.bottleneck == B.compute_bound and report.verdict.source == "sampler", key
        v = report.verdict.per_gpu["0"]
        assert v.undecided_between == [B.compute_bound, B.memory_bound] and v.decision == COMPUTE_WITH_MEMORY
    unprofiled = judged(LIVE["bert_large_train.no_profile"]).verdict.per_gpu["0"]
    assert unprofiled.undecided_between == [B.compute_bound, B.memory_bound]
    assert unprofiled.decision == COMPUTE_WITH_MEMORY  # the same advice without a trace: fuse


def test_a_clear_lead_of_memory_bound_kernels_replaces_the_samplers_compute_bound():
    # a DataLoader-fed loop (input_starved.py --fixed): memory-bound kernels 60% of the window against 36%
    rec = GALLERY["input_starved_fixed"]
    report = judged(rec)
    assert report.verdict.bottleneck == B.memory_bound and report.verdict.source == "trace"
    assert report.verdict.per_gpu["0"].bottleneck == B.compute_bound


def test_a_trace_starved_by_the_profiler_still_settles_the_kernels_the_sampler_left_open():
    # the GPT loop (DataLoader, 4 workers): 100% GPU-Util unprofiled, 35% idle in its trace (the profiler's
    # overhead, launch_bound); its kernels: elementwise 41% of the window, GEMMs and attention 24%
    report = judged(LIVE["gpt_loop.default"])
    merged = report.verdict.merged
    assert merged.trace == B.launch_bound and merged.profiler_starved
    assert report.verdict.bottleneck == B.memory_bound and "its kernels" in merged.why
    assert judged(LIVE["gpt_loop.no_profile"]).verdict.bottleneck == B.compute_bound


def test_the_lines_named_are_where_threads_work_not_where_a_library_parks_its_idle_threads():
    lines = judged(LIVE["gpt_loop.default"]).stacks.lines
    assert lines[0].line == 58 and lines[0].category == "launch" and lines[0].main  # optimizer step
    assert all(x.file.endswith("gpt_loop.py") or x.category == "gc" for x in lines if x.main)
    others = [x for x in lines if not x.main]  # recorded: the pin-memory thread parked in threading.py at 386%
    assert others and all(x.category not in ("input_wait", "gpu_wait") for x in others)  # its pinning stays
    assert all(x.share <= 1.0 for x in lines)


def test_an_unlike_window_naming_no_open_cause_does_not_decide_and_a_near_tie_of_kernels_settles_nothing():
    # the optimizer on the GPU (cpu_optimizer.py --fixed): live, its trace (34% GPU-Util against 86% unprofiled)
    # said launch_bound and decided the run; the sampler had left compute_bound, memory_bound, underfilled open
    rec = GALLERY["cpu_optimizer_fixed"]
    assert rec["merged"] == "launch_bound"
    report = judged(rec)
    shares = rec["profile"]["trace"]["verdict"]["shares_pct"]
    assert shares["memory_bound"] > shares["compute_bound"] > shares["memory_bound"] / KERNEL_LEAD.value
    assert report.verdict.bottleneck == B.compute_bound and report.verdict.source == "sampler"
    assert "unlike the rest of the run" in report.verdict.merged.why


def test_kernels_settle_with_the_samplers_own_cause_or_a_clear_lead():
    def trace(**shares: float) -> TraceVerdict:
        return TraceVerdict(bottleneck=B.launch_bound, shares_pct={"launch_bound": 35.0, **shares})

    both = [B.compute_bound, B.memory_bound]
    assert kernels_settle(trace(memory_bound=41.0, compute_bound=24.0), both, B.compute_bound) == B.memory_bound
    assert kernels_settle(trace(memory_bound=20.3, compute_bound=18.6), both, B.compute_bound) is None
    assert kernels_settle(trace(memory_bound=10.0, compute_bound=50.0), both, B.compute_bound) == B.compute_bound
    assert kernels_settle(trace(memory_bound=41.0), [B.compute_bound, B.sync_bound], B.compute_bound) is None


def test_a_run_too_short_beside_the_profilers_hold_still_discounts_the_idle_the_profiler_caused():
    # a machine just started: the profiler held 5.3 and 7.5 s of 10 s loops, too little run beside it to measure
    # its effect; live, the traces' launch_bound (32-33% idle) decided against 100% GPU-Util in the steady run
    for key in ("bert_large_train.default_4", "bert_large_train.no_gpm_2"):
        rec = LIVE[key]
        assert rec["merged"] == "launch_bound"
        report = judged(rec)
        assert report.verdict.profiler_effect is None
        assert report.verdict.bottleneck == B.compute_bound and report.verdict.merged.profiler_starved, key
        assert "100% in the steady run" in report.verdict.merged.why
