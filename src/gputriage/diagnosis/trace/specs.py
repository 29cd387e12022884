"""The catalog entries of a profiled window's findings (`trace.*`), their thresholds and the wording they share."""

from __future__ import annotations

from gputriage.diagnosis.bottlenecks import MEANINGS
from gputriage.diagnosis.trace.verdict import DECISION, UNDERFILLED_BUSY
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import FindingSpec, Severity, Threshold

TRACE = ("trace", "run")


J = "judgement"


FINDING_MIN = Threshold("finding_min_pct", 10.0, "% of the window", "time a cause must take to be a finding", J)


PAGEABLE_MIN = Threshold(
    "pageable_min_pct",
    2.0,
    "% of the window",
    "copies from pageable memory worth a warning (they block the host and run at a fraction of the link's speed)",
    J,
)


CHAIN_MIN_KERNELS = Threshold(
    "chain_min_kernels",
    3,
    "kernels",
    "distinct elementwise kernels over tensors beyond any L2 that fusion would collapse",
    J,
)


SLOW_GEMM = Threshold(
    "slow_gemm_pct_of_peak",
    50.0,
    "% of the datasheet",
    "rate of large tensor-core GEMMs under which something slows them down",
    "recorded H200 traces: large bf16 GEMMs reach 68-78% of the dense datasheet",
)


SLOW_GEMM_MIN_US = Threshold(
    "slow_gemm_min_us", 100.0, "µs", "kernels long enough that shape and launch effects do not explain a low rate", J
)


SLOW_GEMM_SHARE = Threshold(
    "slow_gemm_min_share_pct", 20.0, "% of kernel time", "kernel time such GEMMs must take to matter", J
)


def _spec(b: B, condition: str, *thresholds: Threshold, severity: Severity = Severity.warn) -> FindingSpec:
    m = MEANINGS[b]
    return FindingSpec(
        id=f"trace.{b.value}",
        step=m.step,
        severity=severity,
        symptom=m.symptom,
        cause=m.cause,
        decision=DECISION[b],
        commands=TRACE,
        condition=condition,
        thresholds=thresholds,
        needs=("trace",),
    )


SPECS = {
    B.launch_bound: _spec(B.launch_bound, "GPU idle waiting for kernel launches >= 10% of the window", FINDING_MIN),
    B.sync_bound: _spec(B.sync_bound, "GPU idle after host synchronizations >= 10% of the window", FINDING_MIN),
    B.input_starved: _spec(
        B.input_starved,
        "GPU idle while the host works outside framework ops (not after reading a result back) >= 10% of the window",
        FINDING_MIN,
    ),
    B.host_bound: _spec(
        B.host_bound,
        "GPU idle while the host computes in framework ops, or after reading a result "
        "back from the GPU, >= 10% of the window",
        FINDING_MIN,
    ),
    B.h2d_copy_bound: _spec(
        B.h2d_copy_bound,
        "pageable copies >= 2% of the window (warn), or all host-device copies >= 10% (info)",
        PAGEABLE_MIN,
        FINDING_MIN,
    ),
    B.tensor_cores_idle: _spec(B.tensor_cores_idle, "GEMMs on CUDA cores >= 10% of the window", FINDING_MIN),
    B.memory_bound: _spec(
        B.memory_bound,
        "elementwise and reduction kernels >= 10% of the window (warn when a "
        "chain of such kernels over large tensors is the verdict)",
        FINDING_MIN,
        CHAIN_MIN_KERNELS,
        severity=Severity.info,
    ),
    B.vram_pressure: _spec(B.vram_pressure, "GPU idle after cudaMalloc/cudaFree >= 10% of the window", FINDING_MIN),
    B.underfilled: _spec(
        B.underfilled,
        "busy >= half the window, and >= 50% of busy time in kernels whose blocks cover under half the SMs",
        UNDERFILLED_BUSY,
    ),
    B.comm_bound: _spec(B.comm_bound, "communication no computation overlaps >= 10% of the window", FINDING_MIN),
}


SLOW_GEMMS = FindingSpec(
    id="trace.slow_gemms",
    step=2,
    severity=Severity.warn,
    commands=TRACE,
    needs=("trace", "spec"),
    symptom="Large tensor-core GEMMs run far under the datasheet rate",
    cause="Kernels long enough to run at full rate run slowly: the GPU is time-sliced with another process, or its "
    "clocks are held down (power, thermal)",
    decision="Look for other processes on the GPU and clock-event reasons (`gputriage check`, or `gputriage run`, "
    "which sees both); compare with `gputriage bench`",
    condition=f"a tensor-core GEMM of >= {SLOW_GEMM_MIN_US.value:g} µs taking >= {SLOW_GEMM_SHARE.value:g}% of kernel "
    f"time, not under the memory roof, reaches < {SLOW_GEMM.value:g}% of the datasheet rate",
    thresholds=(SLOW_GEMM, SLOW_GEMM_MIN_US, SLOW_GEMM_SHARE),
)


PAGEABLE_COPY_CAUSE = (
    "Copies from pageable memory are staged through a driver buffer and run at a fraction of the "
    "link's speed, and they block the host"
)


# copies from pinned memory with little compute to overlap them with: the link is the limit
LINK_COPY_CAUSE = "The copies come from pinned memory at the link's speed, with little compute to overlap them with"


LINK_COPY_DECISION = (
    "The link is the limit: send fewer bytes (uint8/bf16 on the wire, decode on the GPU), or keep "
    "the data on the GPU between steps"
)


# copies from pinned memory that no kernel runs beside, beside compute they could overlap
PINNED_COPY_CAUSE = (
    "The copies come from pinned memory at the link's speed, but no kernel runs beside them: they "
    "take turns with the compute on one stream, and the SMs idle while data crosses the link"
)


PINNED_COPY_DECISION = (
    "Overlap the copies with compute: copy the next batch on a side stream while this one computes "
    "(non_blocking=True, an event the compute stream waits on, as a prefetcher does), or keep the "
    "data on the GPU; send fewer bytes (uint8/bf16 on the wire, decode on the GPU)"
)


# slow GEMMs whose kernel was built for an older GPU generation than the one it runs on
OLDER_ARCH_CAUSE = (
    "The GEMM kernel was built for an older GPU generation ({older}): it cannot use this GPU's "
    "tensor-core instructions (Hopper's wgmma), so it runs at a fraction of the rate — the library has "
    "no kernel of this GPU's generation for this op and dtype (torch._int_mm's int8 on Hopper)"
)


OLDER_ARCH_DECISION = (
    "Use an op with kernels for this GPU: fp8 through torch._scaled_mm on Hopper and newer, or a "
    "quantization library's kernels for this generation; update PyTorch (cuBLAS, CUTLASS); "
    "`gputriage bench` shows what the GPU reaches"
)


FP64_GEMMS = FindingSpec(
    id="trace.fp64_gemms",
    step=2,
    severity=Severity.info,
    commands=TRACE,
    needs=("trace",),
    symptom="Double-precision GEMMs take much of the window",
    cause="fp64 matrix products run at the GPU's fp64 rate: on A100, H100, H200 and B200 its fp64 tensor cores "
    "(about a fifteenth of bf16's rate), on GeForce, RTX and L4/L40 parts CUDA cores at 1/64 of fp32",
    decision="Keep fp64 where the computation needs it (solvers, ill-conditioned systems); where it does not, TF32 "
    "(torch.backends.cuda.matmul.allow_tf32 = True on fp32) or bf16 run an order of magnitude faster, and "
    "mixed-precision refinement keeps fp64 accuracy for linear solves",
    condition=f"fp64 GEMMs >= {FINDING_MIN.value:g}% of the window",
    thresholds=(FINDING_MIN,),
)


ALL_SPECS = (*SPECS.values(), SLOW_GEMMS, FP64_GEMMS)
