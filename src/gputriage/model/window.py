"""A judged window: one GPU's samples over a second (by default), summarized; what the run's
verdict is decided from."""

from __future__ import annotations

from typing import Iterator, Optional, Protocol, Sequence

import msgspec

from gputriage.inworkload.stack_categories import LOADER_FIELD
from gputriage.inworkload.stack_categories import SHARE_FIELDS as SHARE_FIELDS  # the judges read it here

# The per-GPU figures of a window: medians unless the name says max or share
GPU_FIELDS = (
    "util_pct",
    "util_max_pct",
    "mem_util_pct",
    "sm_active_pct",
    "sm_active_max_pct",
    "sm_occupancy_pct",
    "tensor_active_pct",
    "dram_active_pct",
    "cuda_math_active_pct",
    "pcie_rx_mib_per_s",
    "pcie_tx_mib_per_s",
    "nvlink_tx_mib_per_s",
    "nvlink_rx_mib_per_s",
    "power_w",
    "power_max_w",
    "sm_clock_mhz",
    "temperature_c",
    "temperature_max_c",
    "used_bytes",
    "used_max_bytes",
    "throttled_share",
    "power_capped_share",
    "neighbours",
    "job_computing",
)
# The host's and the workload's figures of a window (the same for every GPU)
HOST_FIELDS = (
    "max_core_pct",
    "iowait_pct",
    "swap_in_pages_per_s",
    "swap_in_max_pages_per_s",
    "workload_cpu_pct",
    "gpu_process_cpu_pct",
    "read_mb_per_s",
    "write_mb_per_s",
    "top_thread_pct",
    "gpu_main_thread_pct",
    "workload_vram_max_bytes",
    "workload_rss_max_bytes",
    "mem_available_min_bytes",
    "job_gpu_processes",
    "job_gpus",
    "loader_workers",
    "loader_cpu_pct",
    "loader_worker_cpu_pct",
    "workload_cores",
    "steps_total",
    "samples_total",
    "tokens_total",
    "progress_dt_s",
    "cuda_frees_per_s",
    "alloc_retries_per_s",
    "ooms_total",
    "oom_requested_bytes",
    "allocator_reserved_bytes",
    "allocator_allocated_bytes",
    *SHARE_FIELDS.values(),
    LOADER_FIELD,
    "host_others_busy",
    "host_stack_samples",
)


class WindowMetrics(msgspec.Struct, kw_only=True, omit_defaults=True):
    t0_s: float  # unix seconds: first sample
    t1_s: float  # end of the window (its edge, or its last sample)
    samples: int = 0
    util_pct: Optional[float] = None
    util_max_pct: Optional[float] = None
    mem_util_pct: Optional[float] = None
    sm_active_pct: Optional[float] = None
    sm_active_max_pct: Optional[float] = None
    sm_occupancy_pct: Optional[float] = None
    tensor_active_pct: Optional[float] = None
    dram_active_pct: Optional[float] = None
    cuda_math_active_pct: Optional[float] = None  # the busiest non-tensor math pipe (FP64, FP32, FP16): CUDA cores
    pcie_rx_mib_per_s: Optional[float] = None
    pcie_tx_mib_per_s: Optional[float] = None
    nvlink_tx_mib_per_s: Optional[float] = None
    nvlink_rx_mib_per_s: Optional[float] = None
    power_w: Optional[float] = None
    power_max_w: Optional[float] = None
    sm_clock_mhz: Optional[float] = None
    temperature_c: Optional[float] = None
    temperature_max_c: Optional[float] = None
    used_bytes: Optional[float] = None
    used_max_bytes: Optional[float] = None
    throttled_share: Optional[float] = None  # of samples with a thermal or hardware slowdown reason
    power_capped_share: Optional[float] = None  # of samples with the software power cap active
    neighbours: Optional[float] = None  # other processes on this GPU (most seen in the window)
    job_computing: Optional[float] = None  # the workload's own processes running kernels on this GPU (most seen)
    max_core_pct: Optional[float] = None  # the host's busiest core
    iowait_pct: Optional[float] = None
    swap_in_pages_per_s: Optional[float] = None
    swap_in_max_pages_per_s: Optional[float] = None
    workload_cpu_pct: Optional[float] = None
    gpu_process_cpu_pct: Optional[float] = None  # the CPU of its processes holding a GPU context (not their helpers)
    read_mb_per_s: Optional[float] = None  # the workload's reads (rchar): files, pipes, sockets
    write_mb_per_s: Optional[float] = None  # the workload's writes to storage (write_bytes): checkpoints, dumps
    top_thread_pct: Optional[float] = None
    gpu_main_thread_pct: Optional[float] = None  # the main thread of the processes holding a GPU context
    workload_vram_max_bytes: Optional[float] = None
    workload_rss_max_bytes: Optional[float] = None
    mem_available_min_bytes: Optional[float] = None  # the host's MemAvailable, lowest in the window
    job_gpu_processes: Optional[float] = None  # the workload's processes with a context on any sampled GPU (most seen)
    job_gpus: Optional[float] = None  # the sampled GPUs on which the workload holds a context (most seen)
    loader_workers: Optional[float] = None  # its DataLoader's worker processes (most seen)
    loader_cpu_pct: Optional[float] = None  # their CPU together, % of one core
    loader_worker_cpu_pct: Optional[float] = None  # per worker, on average
    workload_cores: Optional[float] = None  # the cores the workload may use (affinity, cgroup quota; least seen)
    steps_total: Optional[float] = None  # gputriage.step() counts at the window's end (cumulative)
    samples_total: Optional[float] = None
    tokens_total: Optional[float] = None
    progress_dt_s: Optional[float] = None  # when the totals were read: seconds after the window's start
    # PyTorch's caching allocator in the workload (`allocator_counters`; None where nothing reported)
    cuda_frees_per_s: Optional[float] = None  # memory given back to the driver (empty_cache, a retry)
    alloc_retries_per_s: Optional[float] = None  # allocations that failed, freed the cache and tried again
    ooms_total: Optional[float] = None  # out-of-memory errors raised so far
    oom_requested_bytes: Optional[float] = None  # the largest allocation that failed
    allocator_reserved_bytes: Optional[float] = None  # what the allocator holds from the driver
    allocator_allocated_bytes: Optional[float] = None  # what the workload's tensors hold of it
    # where the main thread of its Python processes spent the window, one field per category of the stack sampler
    # (`inworkload.stack_categories`; None where nothing reported)
    host_gpu_wait_share: Optional[float] = None  # waiting on the GPU's results (.item(), synchronize)
    host_input_wait_share: Optional[float] = None  # blocked for input (queues, sockets, sleep, a DataLoader)
    host_copy_share: Optional[float] = None  # copying (.to, .cuda, copy_, pinning)
    host_compute_share: Optional[float] = None  # running Python, numpy, tokenizers on the host
    host_compile_share: Optional[float] = None  # torch.compile compiling
    host_gc_share: Optional[float] = None  # in garbage collection
    host_launch_share: Optional[float] = None  # inside torch's ops (launching the GPU's work)
    host_loop_share: Optional[float] = None  # in a training framework's loop (Lightning's, the Trainer's hooks)
    host_ops_share: Optional[float] = None  # in a library's ops on the CPU (ONNX Runtime's CPU provider, JAX on CPU)
    host_collective_wait_share: Optional[float] = None  # in a collective (torch.distributed), waiting for its peers
    host_input_loader_share: Optional[float] = None  # of its input waits, those on a DataLoader's workers
    host_others_busy: Optional[float] = None  # the other Python threads at work beside it (threads, on average)
    host_stack_samples: Optional[float] = None  # the main thread's samples behind these shares

    @property
    def duration_s(self) -> float:
        return self.t1_s - self.t0_s


class Windows(Protocol):
    """One GPU's windows (the host's figures included), oldest first, or the host's alone: what a judge reads
    of a run. The sampler's columnar store (`sampling.window_store.WindowSeries`) is one."""

    @property
    def gpu(self) -> int | None: ...  # None: the host's windows

    @property
    def window_s(self) -> float: ...

    @property
    def samples(self) -> Sequence[int]: ...

    @property
    def ends_s(self) -> Sequence[float]: ...  # each window's end, unix seconds

    def __len__(self) -> int: ...

    def column(self, name: str) -> list[float | None]: ...

    def __getitem__(self, i: int) -> WindowMetrics: ...

    def __iter__(self) -> Iterator[WindowMetrics]: ...
