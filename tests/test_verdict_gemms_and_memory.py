"""A busy GPU whose tensor-core GEMMs take turns with memory-bound kernels (eager training: unfused norms, dropout,
residual adds): GPM's counters see SMs busy with quiet math pipes and DRAM streaming, leave memory_bound open and
advise fusing; a trace measures which of the two takes more of the GPU's time. H200 recordings."""

from __future__ import annotations

from gputriage.diagnosis.bottlenecks import COMPUTE_OFF_TENSOR_CORES, COMPUTE_WITH_MEMORY, DECISIONS
from gputriage.diagnosis.run.classify import DRAM_MIXED, takes_turns
from gputriage.model.bottleneck import Bottleneck as B
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


def test_its_trace_without_gpm_names_the_elementwise_kernels_that_lead():
    report = judged(MODES["bert_large_train.no_gpm"])
    assert report.verdict.bottleneck == B.memory_bound and report.verdict.merged.trace == B.memory_bound
    busy = MODES["bert_large_train.no_gpm"]["profile"]["trace"]["ranks"][0]["anatomy"][0]["busy"]
    gemm = busy["gemm_tensor_core"]["pct"] + busy["attention"]["pct"]
    assert busy["elementwise_reduction"]["pct"] > gemm > 40  # 48.2% against 43.5%: the trace measures the split
    assert "trace.memory_bound" in {f.id for f in report.findings}


def test_gemm_led_loops_keep_compute_bound_without_memory_bound_open():
    # a GEMM loop streams little (DRAM 17%); an int8 GEMM loop 2.6%; a loop at tensor pipes >= 30% is healthy
    for rec in (AUTO["healthy"], AUTO["launch_bound_fixed"], AUTO["cpu_optimizer_fixed"], FIRST6["int8_gemm"]):
        v = judged(rec).verdict.per_gpu["0"]
        assert v.bottleneck == B.compute_bound and B.memory_bound not in v.undecided_between
        assert v.decision in (DECISIONS[B.compute_bound], COMPUTE_OFF_TENSOR_CORES)


def test_fp32_math_on_cuda_cores_is_not_a_mix_with_memory():
    assert takes_turns(47.0, 3.9) and not takes_turns(47.0, 76.7) and not takes_turns(17.5, 0.0)
    assert not takes_turns(None, None)
