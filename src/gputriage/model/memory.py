"""What PyTorch's CUDA caching allocator held, read from its snapshot (`torch.cuda.memory._snapshot()`, the file
memory_viz reads): the live bytes by the Python line that allocated them, how fragmented its cache is, the live
memory over time where its history was recorded, the out-of-memory error it raised with the processes on the GPU
at that moment, and the verdict on that error (`gputriage memory`, and a run that ran out of memory)."""

from __future__ import annotations

from typing import Optional

import msgspec

from gputriage.model.finding import Finding

MEMORY_SCHEMA = "gputriage.memory"
MEMORY_VERSION = 1

NO_STACK = "(no stack: allocated before its stack was recorded)"  # the line of a block without frames
NO_PYTHON = "(no Python frames)"  # frames recorded, none of them Python's (autograd's backward thread, C++)
PHASES = ("forward", "backward", "optimizer_first_step", "optimizer", "other")


def size_text(n_bytes: float | None) -> str:
    """Bytes as people read them: 1.5 GiB, 312 MiB, 4.0 KiB."""
    if n_bytes is None:
        return "?"
    n = float(n_bytes)
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if abs(n) >= 1 << shift:
            value = n / (1 << shift)
            return f"{value:,.1f} {unit}" if abs(value) < 100 else f"{value:,.0f} {unit}"
    return f"{n:,.0f} B"


def short_label(file: str, line: int) -> str:
    """A short 'file:line' for a table: the file's last two path parts."""
    parts = file.replace("\\", "/").rsplit("/", 2)
    short = "/".join(parts[-2:]) if len(parts) > 2 else file
    return short if line <= 0 else f"{short}:{line}"


class Frame(msgspec.Struct, array_like=True, frozen=True):
    """One Python frame of an allocation's stack."""

    file: str
    line: int
    function: str


class MemoryLine(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A Python line and the allocator's blocks it allocated that are live: the innermost frame outside torch and
    the standard library (the workload's own code, or a library's model code); `via`: the workload's own line that
    called into that library, where the stack shows one."""

    file: str
    line: int
    function: str
    bytes: int  # live bytes (the block sizes the allocator gave: requests rounded up)
    blocks: int
    own: bool = True  # a file of the workload's own code (not a library's)
    via: Optional[str] = None  # "file:line" of the workload's own line that called the library
    growth_bytes: Optional[int] = None  # live bytes it added over the growth seen, where growth was seen
    requested_bytes: Optional[int] = None  # what the calls asked for (before rounding), where the snapshot says

    @property
    def label(self) -> str:
        return self.file if self.line <= 0 else f"{self.file}:{self.line}"


class SegmentMap(msgspec.Struct, kw_only=True):
    """One segment (one cudaMalloc) at the moment of the snapshot, for the map: its blocks in address order, each
    (bytes, state, line) where state is 0 free, 1 live, 2 freed but awaiting another stream, and line the index in
    the report's top lines (-1: another line)."""

    address: int
    total_bytes: int
    pool: str  # "large" or "small" (blocks of 1 MiB and less)
    stream: int = 0
    expandable: bool = False
    blocks: list[tuple[int, int, int]] = []
    merged_blocks: int = 0  # blocks too small to draw, merged into their neighbours


class LiveSeries(msgspec.Struct, kw_only=True):
    """Live bytes over time, replayed from the allocator's recorded history (alloc and free events): in all, and
    for each of the report's top lines (`lines`, in the order of the report's top lines)."""

    t_s: list[float] = []  # seconds since the first event recorded
    total_bytes: list[int] = []
    lines: list[str] = []  # the labels of the lines drawn
    by_line: list[list[int]] = []  # one list per line, aligned on t_s
    events: int = 0  # alloc and free events recorded
    span_s: float = 0.0


class Growth(msgspec.Struct, kw_only=True):
    """Live memory rising step after step: the lowest live bytes of each slice of the time seen (what stays between
    steps), and how much they rose."""

    source: str  # "history" (the allocator's recorded events) or "samples" (the counters `run` read)
    t_s: list[float] = []  # seconds since the first point, each slice's trough
    trough_bytes: list[int] = []
    grown_bytes: int = 0  # from the first trough to the last, fitted
    span_s: float = 0.0
    freed_bytes: Optional[int] = None  # freed over the span (the history's free events; None: not seen)


class OomEvent(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The allocation that failed."""

    requested_bytes: int  # as the allocator rounded it
    device_free_bytes: Optional[int] = None  # what CUDA said was free on the device
    capacity_bytes: Optional[int] = None  # the device's memory (or the share this process was allowed)
    t_s: Optional[float] = None  # unix seconds
    stack: list[Frame] = []  # innermost first: the thread that asked, then (where it had no Python frames) the main one
    line: Optional[str] = None  # "file:line" of the line that asked (`MemoryLine`'s rule)
    function: Optional[str] = None
    phase: Optional[str] = None  # one of PHASES, from the stack


class ProcessMemory(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A process holding memory on the GPU at the out-of-memory error (NVML's per-process reading)."""

    pid: int
    used_bytes: Optional[int] = None
    own: bool = False  # one of the workload's own processes
    name: Optional[str] = None
    owner: Optional[str] = None  # its container or Kubernetes pod, where known


class MemoryState(msgspec.Struct, kw_only=True):
    """The allocator of one device, as the snapshot shows it."""

    device: int = 0
    reserved_bytes: int = 0  # every segment (what the allocator holds from CUDA)
    allocated_bytes: int = 0  # blocks held by tensors
    pending_free_bytes: int = 0  # blocks freed but awaiting another stream's work
    cached_free_bytes: int = 0  # free blocks inside the segments (reserved, not in use)
    largest_free_bytes: int = 0  # the largest free block (of the large pool, where the failed request was large)
    fragmentation: Optional[float] = None  # 1 - largest free block / free cached bytes; None without free bytes
    allocated_share: Optional[float] = None  # allocated / reserved
    segments: int = 0
    blocks: int = 0
    expandable_segments: Optional[bool] = None
    allocator_settings: str = ""  # PYTORCH_CUDA_ALLOC_CONF as the allocator read it
    stacks: bool = False  # blocks carry the stacks that allocated them
    unstacked_bytes: int = 0  # live bytes whose block carries no stack
    top_lines: list[MemoryLine] = []
    growth_lines: list[MemoryLine] = []  # the lines whose live bytes grew, the most first
    growth: Optional[Growth] = None
    series: Optional[LiveSeries] = None
    segment_map: list[SegmentMap] = []
    oom: Optional[OomEvent] = None
    processes: list[ProcessMemory] = []  # on this device at the error, where NVML was read
    other_processes_bytes: Optional[int] = None  # their memory in all (None: not read)
    capacity_bytes: Optional[int] = None


class MemoryReport(msgspec.Struct, kw_only=True):
    schema: str = MEMORY_SCHEMA
    version: int = MEMORY_VERSION
    source: str = ""  # the snapshot's file
    state: MemoryState = msgspec.field(default_factory=MemoryState)
    cause: Optional[str] = None  # the finding id that names the kind of out-of-memory error; None: none named
    summary: str = ""
    findings: list[Finding] = []
    notes: list[str] = []


class MemoryDump(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A snapshot the workload's allocator thread saved under `run` (at an out-of-memory error, or while its live
    memory grew), with what it said of that moment and the processes the sampler read on the GPU then."""

    kind: str  # "oom" or "growth"
    pid: int
    snapshot: str  # the pickle's path
    t_s: Optional[float] = None
    device: Optional[int] = None
    requested_bytes: Optional[int] = None
    capacity_bytes: Optional[int] = None
    device_free_bytes: Optional[int] = None
    stack: list[Frame] = []
    history: str = ""  # how the allocation stacks were recorded: "off", "on", or why they were armed
    processes: Optional[list[ProcessMemory]] = None  # None: not read
