"""One reading of the GPUs, the host and the workload at one instant (what the sampler produces).

Values a source does not give are None (never zero-filled). Units are in the names: `_pct`,
`_mw`, `_mhz`, `_c`, `_bytes`, `_per_s`; PCIe and NVLink throughput are NVML GPM's MiB/s.
"""

from __future__ import annotations

from typing import Any, Optional

import msgspec


class GpuSample(msgspec.Struct, kw_only=True, omit_defaults=True):
    index: int
    util_pct: Optional[float] = None  # nvidia-smi's GPU-Util: share of time a kernel ran
    mem_util_pct: Optional[float] = None
    power_mw: Optional[int] = None
    sm_clock_mhz: Optional[int] = None
    clock_event_reasons: Optional[int] = None  # nvmlClocksEventReasons bitmask
    used_bytes: Optional[int] = None
    temperature_c: Optional[float] = None
    # NVML GPM (Hopper and newer), averaged over the interval since the previous GPM reading
    sm_active_pct: Optional[float] = None
    sm_occupancy_pct: Optional[float] = None
    tensor_active_pct: Optional[float] = None
    dram_active_pct: Optional[float] = None
    fp64_active_pct: Optional[float] = None  # non-tensor math pipes (CUDA cores)
    fp32_active_pct: Optional[float] = None
    fp16_active_pct: Optional[float] = None
    pcie_tx_mib_per_s: Optional[float] = None
    pcie_rx_mib_per_s: Optional[float] = None
    # NVLink payload, all links (GPM; before Hopper the NVLink counters, read with the slow fields)
    nvlink_tx_mib_per_s: Optional[float] = None
    nvlink_rx_mib_per_s: Optional[float] = None


class HostSample(msgspec.Struct, kw_only=True, omit_defaults=True):
    cpu_busy_pct: Optional[list[float]] = None  # per core
    iowait_pct: Optional[float] = None
    mem_available_bytes: Optional[int] = None
    swap_used_bytes: Optional[int] = None
    major_faults_per_s: Optional[float] = None
    swap_in_pages_per_s: Optional[float] = None
    disk_read_bytes_per_s: Optional[float] = None
    disk_write_bytes_per_s: Optional[float] = None
    net_rx_bytes_per_s: Optional[float] = None
    net_tx_bytes_per_s: Optional[float] = None


class StackLine(msgspec.Struct, array_like=True):
    """A line of the workload's Python code and what its threads did there (`inworkload.stack_sampler`)."""

    file: str
    line: int
    function: str
    category: str  # one of `inworkload.stack_categories.CATEGORIES`
    main: float  # samples of the main thread at this line, cumulative
    all: float  # samples of every thread
    own: Optional[bool] = None  # the workload's own code, as the sampler saw its file (None: a recording without it)


class StackCounts(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The stack sampler's counts in the workload's processes that launch its work, cumulative since each started."""

    ticks: float = 0.0  # sampling rounds (the main thread is sampled at each)
    main: dict[str, float] = {}  # the main thread's samples per category, and "loader": its input waits on a DataLoader
    all: dict[str, float] = {}  # every thread's
    main_cpu_s: Optional[float] = None  # the main thread's CPU time
    wall_s: float = 0.0  # the time sampled
    lines: Optional[list[StackLine]] = None  # the top lines: carried by a sample now and then, not by each
    libraries: dict[str, str] = {}  # the GPU libraries and frameworks it imported, by version: with the lines


class RankNow(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Where a rank's main thread is now: its stack sampler category since when, and (in a long one) its stack."""

    category: str
    since_s: float  # unix seconds
    stack: list[str] = []  # "file:line function", innermost first (carried once the category has lasted a while)


class RankSample(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One rank at one sample: cumulative since its process started, as its stack sampler last reported."""

    rank: int
    pid: int
    local_rank: Optional[int] = None
    world_size: Optional[int] = None
    job_id: Optional[str] = None  # the launcher's: TORCHELASTIC_RUN_ID, SLURM_JOB_ID, ... (GPUTRIAGE_JOB_ID first)
    source: str = "RANK"  # the variable its rank was read from
    steps_total: Optional[float] = None  # steps (or main-loop iterations) timed so far
    step_source: Optional[str] = None  # "gputriage.step" or "main loop"
    step_hist: dict[str, float] = {}  # steps per duration bin (`inworkload.rank_clock.step_bin`), cumulative
    stacks: Optional[StackCounts] = None  # its own stack counts (the top lines now and then)
    main_runq_s: Optional[float] = None  # its main thread's time waiting for a CPU (runnable, not running)
    process_cpu_s: Optional[float] = None  # its process's CPU time, every thread
    cores: Optional[str] = None  # the cores it may run on ("0-3,8"), where fewer than the machine's
    now: Optional[RankNow] = None


class HangEvent(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Ranks waited in a collective longer than the threshold while others did not arrive: said once, while the job
    ran (on stderr and in the store)."""

    t_s: float  # unix seconds when it was seen
    waited_s: float  # how long the waiting ranks had waited then (the shortest wait)
    after_s: float  # the threshold (`--hang-after`)
    waiting: list[int] = []  # the ranks in a collective
    missing: list[int] = []  # the ranks that did not arrive (none: every rank waits)
    doing: dict[str, str] = {}  # what each missing rank's main thread does (a stack sampler category)
    stacks: dict[str, list[str]] = {}  # each missing rank's stack, "file:line function", innermost first
    job_id: Optional[str] = None
    node: str = ""
    world_size: Optional[int] = None  # ranks in the job (more than were seen: the others run on other nodes)
    source: str = "stack sampler"  # or "py-spy" (watch, the exporter)


class WorkloadSample(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The workload's process tree."""

    pids: Optional[int] = None
    cpu_pct: Optional[float] = None  # all its processes, % of one core
    gpu_process_cpu_pct: Optional[float] = None  # those of its processes that hold a context on a sampled GPU
    top_thread_pct: Optional[float] = None  # its busiest thread, % of one core
    gpu_main_thread_pct: Optional[float] = None  # the busiest main thread of its processes holding a GPU context
    rss_bytes: Optional[int] = None
    read_bytes_per_s: Optional[float] = None  # from storage
    write_bytes_per_s: Optional[float] = None
    rchar_bytes_per_s: Optional[float] = None  # every byte its reads returned: files (page cache too), pipes, sockets
    vram_bytes: Optional[int] = None
    # its DataLoader's worker processes (`sampling.loader_workers`) and the cores it may use
    loader_workers: Optional[int] = None
    loader_cpu_pct: Optional[float] = None  # all the workers, % of one core
    loader_worker_cpu_pct: Optional[float] = None  # per worker, on average
    cores_usable: Optional[float] = None  # its affinity, capped by its cgroup's CPU quota
    # what the workload reported through gputriage.step(), all its processes, since it started
    steps_total: Optional[float] = None
    samples_total: Optional[float] = None
    tokens_total: Optional[float] = None
    # PyTorch's CUDA caching allocator in its processes, since each initialized CUDA (`allocator_counters`)
    alloc_retries_total: Optional[float] = None  # allocations retried after the cache was given back
    cuda_mallocs_total: Optional[float] = None
    cuda_frees_total: Optional[float] = None
    ooms_total: Optional[float] = None  # out-of-memory errors raised
    allocator_reserved_bytes: Optional[float] = None  # what the allocator holds from the driver
    allocator_allocated_bytes: Optional[float] = None  # what the workload's tensors hold of it
    oom_requested_bytes: Optional[float] = None  # the largest allocation that failed
    oom_free_bytes: Optional[float] = None  # what the GPU had free then
    stacks: Optional[StackCounts] = None  # where its Python threads spend their time (`stack_sampler`)


class GpuProcess(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A process with a CUDA context on a sampled GPU: another job's (a neighbour), or one of the
    workload's own."""

    gpu: int
    pid: int
    used_bytes: Optional[int] = None
    sm_util_pct: Optional[float] = None  # NVML's per-process utilization: share of time its kernels ran


Neighbour = GpuProcess  # a process on a sampled GPU that is not the workload


class Sample(msgspec.Struct, kw_only=True, omit_defaults=True):
    t_s: float  # unix seconds
    gpus: list[GpuSample] = []
    host: Optional[HostSample] = None
    workload: Optional[WorkloadSample] = None
    neighbours: list[GpuProcess] = []  # other jobs' processes on the sampled GPUs
    job_processes: list[GpuProcess] = []  # the workload's own processes with a context on a sampled GPU
    ranks: list[RankSample] = []  # the ranks of a distributed job among the workload's processes (`run`)
    hang: Optional[HangEvent] = None  # a hang of the job's ranks, seen at this sample (said once)

    def gpu(self, index: int) -> GpuSample | None:
        for g in self.gpus:
            if g.index == index:
                return g
        return None


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Sample)


def encode(sample: Sample) -> bytes:
    return _encoder.encode(sample)


def decode(data: bytes | str) -> Sample:
    """A stored sample: this format, or the untyped one of stores written before it."""
    try:
        return _decoder.decode(data)
    except msgspec.ValidationError:
        return from_legacy(msgspec.json.decode(data))


_GPM_KEYS = {
    "2": "sm_active_pct",
    "3": "sm_occupancy_pct",
    "5": "tensor_active_pct",
    "10": "dram_active_pct",
    "20": "pcie_tx_mib_per_s",
    "21": "pcie_rx_mib_per_s",
    "60": "nvlink_rx_mib_per_s",
    "61": "nvlink_tx_mib_per_s",
}
_GPU_KEYS = {
    "util": "util_pct",
    "memutil": "mem_util_pct",
    "power": "power_mw",
    "sm_clk": "sm_clock_mhz",
    "reasons": "clock_event_reasons",
    "used": "used_bytes",
    "temp": "temperature_c",
}
_HOST_KEYS = {
    "cpu": "cpu_busy_pct",
    "iowait": "iowait_pct",
    "mem_avail": "mem_available_bytes",
    "swap_used": "swap_used_bytes",
    "majflt_s": "major_faults_per_s",
    "swapin_s": "swap_in_pages_per_s",
    "disk_rd_bps": "disk_read_bytes_per_s",
    "disk_wr_bps": "disk_write_bytes_per_s",
    "net_rx_bps": "net_rx_bytes_per_s",
    "net_tx_bps": "net_tx_bytes_per_s",
}
_PROC_KEYS = {
    "pids": "pids",
    "cpu_pct": "cpu_pct",
    "top_thread_pct": "top_thread_pct",
    "rss": "rss_bytes",
    "io_rd_bps": "read_bytes_per_s",
    "io_wr_bps": "write_bytes_per_s",
    "io_rchar_bps": "rchar_bytes_per_s",
    "vram": "vram_bytes",
}


def from_legacy(data: dict[str, Any]) -> Sample:
    """A sample in the untyped layout gputriage stored and recorded before (keys `t`, `util`, `sm_clk`,
    GPM metrics keyed by NVML metric id), as kept in older stores and in recorded fixtures."""
    gpus = []
    for row in data.get("gpus") or []:
        fields: dict[str, Any] = {new: row[old] for old, new in _GPU_KEYS.items() if row.get(old) is not None}
        for mid, new in _GPM_KEYS.items():
            value = (row.get("gpm") or {}).get(mid)
            if value is not None:
                fields[new] = value
        gpus.append(GpuSample(index=int(row.get("index", 0)), **fields))
    host = data.get("host")
    proc = data.get("proc")
    return Sample(
        t_s=float(data["t"]),
        gpus=gpus,
        host=HostSample(**{new: host[old] for old, new in _HOST_KEYS.items() if host.get(old) is not None})
        if host
        else None,
        workload=WorkloadSample(**{new: proc[old] for old, new in _PROC_KEYS.items() if proc.get(old) is not None})
        if proc
        else None,
        neighbours=[
            Neighbour(gpu=int(o["gpu"]), pid=int(o["pid"]), used_bytes=o.get("used")) for o in data.get("others") or []
        ],
    )
