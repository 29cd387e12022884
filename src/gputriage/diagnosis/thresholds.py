"""Thresholds that more than one judgement reads: `check`'s rules, the sampler's classifier and the
run's findings use the same numbers, so a GPU called underfilled by one is underfilled for all.

Sources name where a number comes from: the GPU triage playbook gputriage automates, NVIDIA's
documentation, recordings of real workloads on an H200 (tests/fixtures/h200), or judgement where
nothing better exists (said so)."""

from __future__ import annotations

from gputriage.model.finding import Threshold
from gputriage.model.numbers import GIB

PLAYBOOK = "GPU triage playbook"
H200_RECORDINGS = "recordings of real workloads on an H200 (tests/fixtures/h200)"

IDLE_UTIL = Threshold(
    "idle_util_pct",
    5.0,
    "%",
    "GPU-Util at or below which the GPU runs nothing worth counting",
    f"{PLAYBOOK}, step 1: GPU-Util near 0% during what should be GPU work; idle H200 recordings read 0%",
)
IDLE_SM = Threshold(
    "idle_sm_active_pct",
    5.0,
    "%",
    "SM activity (GPM) at or below which no SM works",
    f"{H200_RECORDINGS}: 0-1% at idle, 6% for the smallest kernels seen",
)
UNDERFILLED_UTIL = Threshold(
    "underfilled_util_pct",
    90.0,
    "%",
    "GPU-Util at or above which a kernel is running nearly all the time",
    f"{H200_RECORDINGS}: small-batch loops read 99-100% GPU-Util",
)
UNDERFILLED_SM = Threshold(
    "underfilled_sm_active_pct",
    50.0,
    "%",
    "SM activity under which most SMs have no block to run although a kernel runs",
    f"{H200_RECORDINGS}: small-batch kernels 18-25% SM activity at 100% GPU-Util; healthy GEMMs 93%",
)
VRAM_NEARLY_FULL = Threshold(
    "vram_nearly_full_pct",
    90.0,
    "%",
    "VRAM used at or above which transient peaks have too little headroom",
    f"{PLAYBOOK}, stable inference checklist: treat 90-95% VRAM use as 'dangerously full'",
)
VRAM_PRESSURE = Threshold(
    "vram_pressure_pct",
    95.0,
    "%",
    "VRAM used at or above which the caching allocator frees and re-acquires memory (cudaFree synchronizes)",
    f"{PLAYBOOK}, stable inference checklist: the top of the 90-95% 'dangerously full' range",
)
TENSOR_BUSY = Threshold(
    "tensor_busy_pct",
    30.0,
    "%",
    "tensor-pipe activity that says the math runs on tensor cores",
    f"{H200_RECORDINGS}: bf16 GEMMs 90%, fp32 GEMMs 0%",
)
IOWAIT = Threshold(
    "iowait_pct",
    10.0,
    "%",
    "Share of CPU time waiting on I/O at which storage holds the input pipeline back",
    f"{PLAYBOOK}, task 6 (mpstat %iowait); judgement for the exact figure",
)
POWER_LIMIT_LOWERED = Threshold(
    "power_limit_lowered_pct",
    90.0,
    "% of default",
    "Enforced power limit under which the limit was lowered on purpose",
    "NVML: nvmlDeviceGetEnforcedPowerLimit against nvmlDeviceGetPowerManagementDefaultLimit; judgement for 90%",
)
SWAP_IN = Threshold(
    "swap_in_pages_per_s",
    10.0,
    "pages/s",
    "Swap-in rate at which the host pages instead of feeding the GPU",
    f"{PLAYBOOK}, task 9 (vmstat si); judgement for the exact figure",
)
IDLE_HELD_GIB = Threshold(
    "idle_held_min_gib",
    1.0,
    "GiB",
    "GPU memory a process holds at or above which, computing nothing, it keeps the GPU from others",
    "a CUDA context with no tensors holds about 0.5 GiB on an H200 (the computing process of the two-process "
    "recording, tests/fixtures/gpu_holders, held 1.05 GB with a 128 MiB matrix); 1 GiB is more than any bare context",
)
IDLE_HELD_SM = Threshold(
    "idle_held_max_sm_util_pct",
    1.0,
    "%",
    "NVML per-process utilization (share of time its kernels ran) under which a process computes nothing",
    "NVML gives whole percents, and no sample at all for a process that ran no kernel (H200, driver 580: the 20 GiB "
    "holder had none while its neighbour read 99-100%); under 1% is 0",
)
IDLE_HELD_AFTER_MIN = Threshold(
    "idle_held_after_min",
    10.0,
    "min",
    "How long a process holds memory and computes nothing before it is said to hold the GPU idle",
    "judgement: longer than a checkpoint save, an evaluation on the CPU or a data-loader restart (seconds to a few "
    "minutes), short enough that a forgotten notebook or a hung job is named within the hour",
)
# the two above in the units the comparisons read: the same thresholds, not others
IDLE_HELD_BYTES = Threshold(
    "idle_held_min_bytes",
    IDLE_HELD_GIB.value * GIB,
    "bytes",
    IDLE_HELD_GIB.meaning,
    "idle_held_min_gib in bytes: the same threshold",
)
IDLE_HELD_MIN_S = Threshold(
    "idle_held_min_s",
    IDLE_HELD_AFTER_MIN.value * 60,
    "s",
    IDLE_HELD_AFTER_MIN.meaning,
    "idle_held_after_min in seconds: the same threshold",
)
TENTATIVE_TRACE = Threshold(
    "tentative_trace_confidence",
    0.5,
    "confidence",
    "Trace confidence under which its verdict is a best guess, worded as tentative (the terminal says so, the JSON "
    "sets `tentative`): the window holds under half the kernels, busy time or idle gaps a sure verdict needs, or "
    "the file was cut",
    "judgement; the figure under which a trace's verdict does not override a decided sampler's (sure_trace_confidence)",
)
