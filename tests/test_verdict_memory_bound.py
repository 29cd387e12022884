"""memory_bound: SMs busy without math on any pipe wait on memory — bandwidth (the usual advice) or latency
(scattered reads) — told from fp32 math on the CUDA cores, on H200 recordings with GPM's math pipes."""

from __future__ import annotations

from gputriage.diagnosis.bottlenecks import MEMORY_LATENCY
from gputriage.diagnosis.run.classify import CUDA_MATH_BUSY
from gputriage.model.bottleneck import Bottleneck as B
from recordings import judged, runs

UNSEEN2 = runs("runs_unseen2.json.gz")
PIPES = runs("runs_pipes.json.gz")


def test_busy_sms_without_math_on_any_pipe_wait_on_memory_not_on_cuda_cores():
    # embedding-bag lookups: SMs 93% busy, tensor pipes 2%, DRAM 25% — recorded before the math pipes were
    # read it was tensor_cores_idle; with them, 1.4% of CUDA-core math against fp32 GEMMs' 77%
    before = judged(UNSEEN2["embedding_lookup_gpm"]).verdict.per_gpu["0"]
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
