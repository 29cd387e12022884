"""The analysis of profiler traces (`trace`, and `run --profile`): where the time of each rank's
window went, its kernels, its verdict and findings."""

from __future__ import annotations

from typing import Optional, Union

import msgspec

from gputriage.model.bottleneck import Bottleneck
from gputriage.model.finding import Finding

TRACE_SCHEMA = "gputriage.trace"
TRACE_VERSION = 2


INT8 = "signed char"  # the profiler's name for int8 operands


def rate_unit(op_dtype: str) -> str:
    """What a kernel's rate counts: integer operations for int8 operands (TOPS), floating-point ones otherwise."""
    return "TOPS" if op_dtype == INT8 else "TFLOP/s"


class TimeShare(msgspec.Struct):
    us: float
    pct: float  # of the window


class SyncOp(msgspec.Struct):
    op: str  # the framework op (or CUDA call) that synchronized
    calls: int
    host_blocked_us: float
    gpu_idle_after_us: float


class Syncs(msgspec.Struct):
    count: int = 0
    host_blocked_us: float = 0.0
    by_op: list[SyncOp] = []


class HostWork(msgspec.Struct):
    """Where the host computed while the GPU waited: inside framework ops on CPU tensors, or after reading a
    result back from the GPU."""

    op: str  # the framework op (or optimizer step) that computed, or the one that read the result back
    where: str  # "in_ops" or "after_read"
    gaps: int
    gpu_idle_us: float


class StepRow(msgspec.Struct):
    step: str
    dur_us: float
    gpu_busy_pct: float
    top_kind: Optional[str] = None


class Anatomy(msgspec.Struct, kw_only=True):
    """One device's window: busy time by kind of GPU work, idle time by what the host was doing."""

    device: int
    window_us: float
    busy_us: float
    idle_us: float
    busy_pct: float
    busy: dict[str, TimeShare] = {}
    idle: dict[str, TimeShare] = {}
    syncs: Syncs = msgspec.field(default_factory=Syncs)
    host_work: list[HostWork] = []  # the host's computation the GPU waited on, longest first
    gaps: int = 0
    kernels: int = 0
    median_kernel_us: float = 0.0
    median_gap_us: float = 0.0
    warmup_skipped_us: float = 0.0
    queued_skipped_us: float = 0.0
    startup_skipped_us: float = 0.0  # before the first CUDA call of a window without step markers
    profiler_skipped_us: float = 0.0  # GPU idle while the profiler stalled the workload (CUPTI buffer requests)
    start_us: float = 0.0  # the judged span, in the trace's clock
    end_us: float = 0.0
    allocator_calls: dict[str, int] = {}  # cudaMalloc/cudaFree calls in the window, by name
    underfilled_us: float = 0.0  # busy time in kernels whose blocks cover under half the SMs
    underfilled_busy_pct: float = 0.0
    steps: list[StepRow] = []

    def busy_of(self, kind: str) -> float:
        share = self.busy.get(kind)
        return share.us if share else 0.0

    def idle_of(self, kind: str) -> float:
        share = self.idle.get(kind)
        return share.us if share else 0.0


class KernelRow(msgspec.Struct, kw_only=True, omit_defaults=True):
    name: str
    kind: str
    tensor_cores: bool
    count: int
    total_us: float
    pct_of_kernel_time: float
    mean_us: float
    median_us: float
    max_us: float
    dtype: Optional[str] = None
    achieved_tflops: Optional[float] = None
    achieved_gbs: Optional[float] = None
    flop_per_byte: Optional[float] = None
    ridge_flop_per_byte: Optional[float] = None
    roof: Optional[str] = None  # "memory" or "compute"


class TraceVerdict(msgspec.Struct, kw_only=True):
    bottleneck: Optional[Bottleneck] = None
    share_pct: float = 0.0  # of the window
    confidence: float = 0.0  # how much the window holds of what the verdict rests on; halved for a cut file
    gpu_idle_pct: float = 0.0
    decision: str = ""
    shares_pct: dict[str, float] = {}
    device: Optional[int] = None
    ranks_agreeing: Optional[int] = None
    ranks: Optional[int] = None
    tentative: bool = False  # confidence under diagnosis.thresholds.TENTATIVE_TRACE: a best guess, worded as one
    too_little: bool = False  # the window holds too few kernels (unless long) to be sure of a bottleneck
    basis: str = ""  # a job of several ranks: "the ranks' averaged shares"
    # a host-side cause from host work outside framework ops whose content the trace does not see (input_starved
    # with no loader event over the gaps, host_bound from the loop's own work): what is left, not what was seen
    by_elimination: bool = False


class Overlap(msgspec.Struct):
    comm_us: float
    overlapped_pct: float  # of communication time that ran while a compute kernel ran


class CompiledShare(msgspec.Struct, kw_only=True):
    """GPU time launched from inside torch.compile'd regions, against the rest (eager code, graph breaks)."""

    regions: int  # compiled regions the trace holds (calls into compiled code on the host, nested marks merged)
    compiled_us: float  # GPU activity time launched inside them
    outside_us: float  # launched outside them
    outside_pct: float  # of the GPU activity time whose launch is known
    outside_ops: dict[str, float] = {}  # GPU µs launched outside, by the outermost op that launched it (top 5)


class RankAnalysis(msgspec.Struct, kw_only=True):
    file: str
    rank: Optional[int] = None
    events: int = 0
    file_bytes: int = 0
    gpu: Optional[str] = None
    spec: Optional[str] = None  # the datasheet entry the GPU matched
    problems: list[str] = []
    skipped_event_kinds: dict[str, int] = {}
    anatomy: list[Anatomy] = []
    kernels: list[KernelRow] = []
    verdict: Optional[TraceVerdict] = None
    overlap: Optional[Overlap] = None
    step_count: int = 0
    analysis_s: float = 0.0
    readers: int = 1  # processes that read the file (a large one is read on several cores)
    readers_memory_bytes: int = 0  # the memory the other readers took (PSS at their end, summed)
    main_device: Optional[int] = None  # the device with the most GPU work: the one judged
    truncated: bool = False  # the file ends inside its events: judged over the span whose record is whole
    elementwise_median_bytes: float = 0.0  # per elementwise op, from the launching ops' shapes
    elementwise_large_kernels: int = 0  # distinct elementwise kernels over tensors beyond any L2
    compiled: Optional[CompiledShare] = None  # where torch.compile'd regions exist

    def main(self) -> Optional[Anatomy]:
        return next((a for a in self.anatomy if a.device == self.main_device), None)


class RankRow(msgspec.Struct, kw_only=True):
    rank: Optional[int] = None
    file: str
    window_us: Optional[float] = None
    busy_pct: Optional[float] = None
    median_step_us: Optional[float] = None
    bottleneck: Optional[Bottleneck] = None
    comm_overlapped_pct: Optional[float] = None


class MultiRank(msgspec.Struct, kw_only=True):
    per_rank: list[RankRow] = []
    compared_on: str = "window_us"
    stragglers: list[Union[int, str]] = []
    busy_pct_spread: Optional[float] = None


class TraceReport(msgspec.Struct, kw_only=True):
    schema: str = TRACE_SCHEMA
    version: int = TRACE_VERSION
    files: list[str] = []
    ranks: list[RankAnalysis] = []
    problems: list[str] = []  # files that could not be read
    verdict: TraceVerdict = msgspec.field(default_factory=TraceVerdict)
    multi_rank: Optional[MultiRank] = None
    findings: list[Finding] = []
