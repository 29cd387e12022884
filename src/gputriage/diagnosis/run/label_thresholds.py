"""The thresholds the sampler's window labels rest on (the rules of `diagnosis.run.labels`), each declared once
with its meaning and the recordings or documents it comes from."""

from __future__ import annotations

from gputriage.diagnosis.thresholds import (
    H200_RECORDINGS,
)
from gputriage.model.finding import Threshold

J = "judgement"


IDLE_WORKLOAD_CPU = Threshold(
    "idle_workload_cpu_pct",
    20.0,
    "% of a core",
    "the workload's CPU under which it is not working on the host either",
    J,
)


IDLE_UTIL_UNSAMPLED = Threshold(
    "idle_util_unsampled_pct",
    1.0,
    "%",
    "GPU-Util under which a GPU is idle when the workload's CPU was not sampled (nothing tells that the host works "
    "while the GPU rests: only a GPU that ran no kernel at all)",
    "judgement: NVML reports GPU-Util in whole percents, so under 1 is 0",
)


JOB_SHARING = Threshold(
    "job_processes_computing",
    2.0,
    "processes",
    "the workload's own processes running kernels on one GPU at once that say they share it (time-slicing)",
    "definition: more than one; NVML per-process utilization",
)


MULTI_GPU_JOB = Threshold(
    "job_gpus_several",
    2.0,
    "GPUs",
    "GPUs on which a job holds contexts that make its collectives possible (and out of sight where its links are "
    "not counted)",
    "definition: more than one",
)


THROTTLED_SHARE = Threshold(
    "throttled_share",
    0.3,
    "share of samples",
    "samples of a window with a slowdown reason for the window to be throttled",
    J,
)


SM_IDLE = Threshold(
    "copy_sm_active_pct",
    30.0,
    "%",
    "SM activity under which a copy, not a kernel, is what runs",
    f"{H200_RECORDINGS}: pageable-copy loops at 2-10% SM activity",
)


PCIE_RX_BUSY = Threshold(
    "pcie_rx_busy_mib_per_s",
    2000.0,
    "MiB/s",
    "host-to-device traffic that says copies are what the GPU waits on",
    f"{H200_RECORDINGS}: pageable copies 5-8 GB/s, pinned 50 GB/s; judgement for 2 GB/s",
)


COPY_TIME_SHARE = Threshold(
    "copy_time_share",
    0.25,
    "share of the time",
    "PCIe RX, as a share of what pinned copies reach on the link (85% of its raw rate), that "
    "says copies run at least this share of the time",
    f"{H200_RECORDINGS}: pinned batches copied before each step on the compute stream 0.45 "
    "(their trace: copies alone 47.5% of the window)",
)


PINNED_LINK_SHARE = Threshold(
    "pinned_link_share",
    0.85,
    "of the link's raw rate",
    "the rate pinned host-to-device copies reach on a PCIe link, against which PCIe RX tells the share of the time "
    "copies run",
    "measurement: `gputriage bench` on an H200 (PCIe Gen5 x16), pinned copies at 85-88% of the link's raw rate",
)


HOST_BOUND_UTIL = Threshold(
    "host_bound_util_pct",
    75.0,
    "%",
    "GPU-Util under which the GPU idles a quarter of the time: the host does not keep it fed",
    J,
)


TENSOR_IDLE = Threshold(
    "tensor_idle_pct",
    5.0,
    "%",
    "tensor-pipe activity under which no math runs on tensor cores",
    f"{H200_RECORDINGS}: fp32 GEMMs 0%",
)


DRAM_BUSY = Threshold(
    "dram_busy_pct",
    60.0,
    "% of peak",
    "DRAM bandwidth at which memory sets the pace",
    f"{H200_RECORDINGS}: unfused elementwise chains 80-90%; GEMMs 17%",
)


DRAM_MIXED = Threshold(
    "dram_mixed_pct",
    30.0,
    "% of peak",
    "DRAM bandwidth at which busy SMs whose math pipes are mostly quiet may spend as much time in memory-bound "
    "kernels as in GEMMs (which of the two leads shows only in a trace)",
    f"{H200_RECORDINGS}: bf16/int8 GEMM loops 0-17%; a GPT training loop 47% (its trace: elementwise kernels 50% of "
    "GPU time), a BERT-large training loop 40% (elementwise 48%, GEMMs and attention 44%)",
)


SM_BUSY = Threshold(
    "cuda_core_sm_pct",
    60.0,
    "%",
    "SM activity at which CUDA-core math (not waiting) fills the SMs",
    f"{H200_RECORDINGS}: fp32 GEMMs 95%",
)


SMALL_KERNEL_SM_PER_UTIL = Threshold(
    "small_kernel_sm_per_util",
    0.5,
    "ratio",
    "SM activity / GPU-Util under which the kernels that run cover under half the SMs",
    f"{H200_RECORDINGS}: launch-bound loops 0.1-0.3, input-starved loops with large kernels 0.9",
)


LIGHT_POWER = Threshold(
    "light_power_share",
    0.35,
    "of the power limit",
    "power under which a GPU busy by GPU-Util has most SMs idle (without GPM)",
    f"{H200_RECORDINGS}: small-batch kernels at 100% GPU-Util draw 24%, the smallest full ones 52%",
)


CUDA_MATH_BUSY = Threshold(
    "cuda_math_busy_pct",
    20.0,
    "%",
    "activity of the busiest non-tensor math pipe (FP64/FP32/FP16) under which busy SMs "
    "without tensor-core work wait on memory rather than compute on CUDA cores",
    f"{H200_RECORDINGS}: fp32 GEMMs 77%; embedding-bag lookups 1.4% (DRAM 25%), elementwise chains 4%, bf16 GEMMs 0%",
)


SMALL_KERNEL_OCC_PER_UTIL = Threshold(
    "small_kernel_occupancy_per_util",
    0.08,
    "ratio",
    "SM occupancy / GPU-Util under which the kernels that run hold few warps: few blocks of few threads",
    f"{H200_RECORDINGS}: launch-bound loops 0.05, an ensemble of 64 small MLPs run one by one 0.04 (SM activity "
    "0.6 of GPU-Util); GEMM loops 0.12-0.15, sync-bound and input-starved loops 0.38",
)


SMALL_KERNEL_POWER_PER_UTIL = Threshold(
    "small_kernel_power_per_util",
    0.6,
    "ratio",
    "power share / GPU-Util under which the kernels that run are small (without GPM)",
    f"{H200_RECORDINGS}: launch-bound loops 0.5, sync-bound and input-starved loops 1.1-1.2",
)
LARGE_KERNEL_POWER_PER_UTIL = Threshold(
    "large_kernel_power_per_util",
    0.9,
    "ratio",
    "power share / GPU-Util from which the kernels that run are not small (without GPM); between it and "
    "SMALL_KERNEL_POWER_PER_UTIL the idle power of a lightly used GPU hides which",
    f"{H200_RECORDINGS}: sync-bound and input-starved loops 1.1-1.2; a batch-1 eager encoder launching 100% of its "
    "time at GPU-Util 27% reads 0.76 (144 W of 700, 120 W idle)",
)


MEM_UTIL_BUSY = Threshold(
    "mem_util_busy_pct",
    80.0,
    "%",
    "nvidia-smi memory util (time memory is busy, not bandwidth) that says memory sets the pace",
    f"{H200_RECORDINGS}: unfused elementwise chains 100%, an AdamW-heavy loop 64%, GEMMs 2-43%",
)


NVLINK_BUSY = Threshold(
    "nvlink_busy_share",
    0.2,
    "of the NVLinks' capacity, busier direction",
    "NVLink payload that says the GPUs spend the window exchanging data",
    "judgement: an all-reduce of 1 GiB between two H200s moves 327 GB/s each way (`bench`), 0.7 "
    "of NV18's 450 GB/s; a step whose all-reduce runs a third of the time averages 0.2 or more",
)


SM_GAPS_PER_UTIL = Threshold(
    "sm_gaps_per_util",
    0.8,
    "ratio",
    "SM activity / GPU-Util under which a GPU computing on tensor cores leaves its SMs idle a fifth of the time: "
    "gaps finer than GPU-Util sees, or kernels that cover part of the SMs",
    f"{H200_RECORDINGS}: compute-bound loops 0.85-0.97; empty_cache() after every step 0.74 (21% slower than "
    "without; the trace: the GPU idle 14% of the time after cudaFree/cudaMalloc), a small batch 0.68",
)


ALLOC_CHURN = Threshold(
    "allocator_frees_per_s",
    1.0,
    "cudaFree calls/s",
    "memory the caching allocator gives back to the driver that says it churns (each cudaFree "
    "synchronizes the GPU); a steady loop gives none back after its first steps",
    f"PyTorch CUDA semantics (empty_cache, allocation retries); {H200_RECORDINGS}: empty_cache() "
    "every step 1,529-1,656/s, vram_churn 479/s; healthy, gpt_loop and a KV-cache pool at 96% of "
    "VRAM 0/s; a near-full loop retrying every 4 s, 0 in most windows",
)
ELIMINATED_SHARE = Threshold(
    "eliminated_share",
    0.5,
    "of the verdict's windows",
    "the share of a host-side verdict's windows named by elimination (nothing seen says what the host does) at which "
    "its words say the verdict was reached by elimination",
    "judgement: most of them",
)
