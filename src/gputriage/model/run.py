"""A monitored run (`run`, `watch`, `monitor()`): what it was, its verdict, its findings.

`run --json`, `show --json` and the store hold the same document: a `RunReport`."""

from __future__ import annotations

from typing import Any, Optional

import msgspec

from gputriage.model.baseline import Diff
from gputriage.model.bottleneck import Bottleneck
from gputriage.model.compile import CompileStats
from gputriage.model.finding import Finding, Severity
from gputriage.model.memory import MemoryReport
from gputriage.model.owner import ProcessOwner
from gputriage.model.ranks import RanksReport
from gputriage.model.trace import TraceReport

RUN_SCHEMA = "gputriage.run"
RUN_VERSION = 2


class GpuStatic(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What does not change about a GPU during a run."""

    name: Optional[str] = None
    uuid: Optional[str] = None
    memory_total_bytes: Optional[int] = None
    power_limit_mw: Optional[int] = None
    power_default_mw: Optional[int] = None
    sm_max_mhz: Optional[int] = None
    pcie_gen_max: Optional[int] = None
    pcie_width_max: Optional[int] = None
    gpm: Optional[bool] = None  # whether this GPU gives GPM metrics (SM activity, tensor pipes, DRAM)
    nvlink_links: Optional[int] = None  # NVLinks present
    nvlink_link_mb_per_s: Optional[float] = None  # the active links' speed, MB/s each way
    ecc: Optional[bool] = None  # ECC mode now
    pcie_gen_current: Optional[int] = None  # the link as it trained when the run started (gen drops at idle)
    pcie_width_current: Optional[int] = None


class RunMeta(msgspec.Struct, kw_only=True):
    hostname: str = ""
    gputriage: str = ""
    python: str = ""
    platform: str = ""
    cwd: str = ""
    period_s: float = 0.1
    gpus: dict[str, GpuStatic] = {}
    system: dict[str, Any] = {}  # driver, CUDA driver, or why NVML answered nothing
    env: dict[str, str] = {}  # the environment variables that change what a GPU job does
    flops_per_token: Optional[float] = None  # the model's, as the user gave them (for its MFU)
    flops_per_step: Optional[float] = None
    price_per_gpu_hour: Optional[float] = None  # the user's price (for the run's cost); none is assumed
    currency: str = "USD"
    idle_held_min_s: Optional[float] = None  # the user's minimum for run.idle_held (None: the threshold's)
    profile_gate: Optional[str] = None  # a running `run --profile`: where `gputriage profile RUN_ID` asks for a window
    gputriage_pid: Optional[int] = None  # the `gputriage run` process (SIGUSR1 asks it for a profile window)


class Regime(msgspec.Struct, omit_defaults=True):
    start_s: float  # seconds since the run started
    end_s: float
    regime: str  # a bottleneck, "start-up", "warm-up (...)" or "shut-down"
    summary: str = ""  # a bottleneck's regime: what its windows show, as a verdict says it
    decision: str = ""
    evidence: dict[str, float] = {}  # medians over the regime's windows


class Series(msgspec.Struct, omit_defaults=True):
    """Per-window figures for a picture of the run (at most a few hundred points)."""

    t_s: list[float] = []
    util_pct: list[Optional[float]] = []
    sm_active_pct: list[Optional[float]] = []
    tensor_active_pct: list[Optional[float]] = []
    dram_active_pct: list[Optional[float]] = []
    power_pct: list[Optional[float]] = []  # of the enforced power limit
    sm_clock_mhz: list[Optional[float]] = []  # the lowest in each point's windows (a drop shows)
    workload_cpu_pct: list[Optional[float]] = []  # the workload's processes, % of one core


class HostLine(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A line of the workload's Python code and the share of the steady time its threads spent there, doing what
    (the stack sampler's category, `inworkload.stack_categories`)."""

    file: str
    line: int
    function: str
    category: str
    share: float  # of the steady time, in the thread(s) that ran it
    main: bool = True  # the main thread's (else another Python thread's)
    inferred: bool = False  # CPU time of the main thread between its waits that no sample caught: its line unknown


class HostStacks(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Where the workload's Python threads spent the steady state, from the stack sampler in its processes
    (`inworkload.stack_sampler`: Python workloads under `run`, and `monitor()`'s block)."""

    span_s: float  # the time the counts cover
    samples: float  # the main thread's samples over it
    main_shares: dict[str, float] = {}  # the main thread's time per category (waits capped at its time off the CPU)
    main_cpu_pct: Optional[float] = None  # its CPU, % of a core
    others_busy: Optional[float] = None  # the other Python threads at work beside it (threads, on average)
    lines: list[HostLine] = []  # the top lines, most time first
    libraries: dict[str, str] = {}  # the GPU libraries and training frameworks the workload imported, by version


class GpuVerdict(msgspec.Struct, kw_only=True):
    gpu: int
    bottleneck: Optional[Bottleneck] = None
    share: float = 0.0  # of steady time
    confidence: float = 0.0
    summary: str = ""
    decision: str = ""
    evidence: dict[str, float] = {}  # medians over the windows of the verdict
    undecided_between: list[Bottleneck] = []
    steady_s: float = 0.0
    startup_s: float = 0.0
    shutdown_s: float = 0.0
    timeline: list[Regime] = []
    shares: dict[str, float] = {}
    series: Series = msgspec.field(default_factory=Series)
    lines: list[HostLine] = []  # a host-side verdict: the workload's Python lines where the steady time went
    # the verdict is stated here once, not repeated among the findings: its catalog entry (`gputriage rules ID`),
    # severity, what fixing it would recover (share of the GPU's time, where estimated) and how to verify the fix
    finding: str = ""  # run.<bottleneck>, or run.input_rate_bound for input_starved at the input rate
    severity: Optional[Severity] = None
    impact: Optional[float] = None
    verify: str = ""


class ProfilerEffect(msgspec.Struct):
    """Median GPU-Util while the profiler ran, and over the rest of the steady run; `in_startup`: the
    profiled window ended before the steady run began (a warm-up before the workload's first step)."""

    inside_pct: float
    outside_pct: float
    in_startup: bool = False
    held_pct: Optional[float] = None  # while it held the workload outside the window: starting, stopping, exporting
    held_s: Optional[float] = None  # seconds it held the workload in all (left out of the sampler's verdict)
    gpu: Optional[int] = None


class MergedVerdict(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The sampler's verdict and the profiler trace's, together (`run --profile`)."""

    bottleneck: Optional[Bottleneck] = None
    source: str = "sampler"  # or "trace"
    sampler: Optional[Bottleneck] = None
    trace: Optional[Bottleneck] = None
    why: str = ""
    profiler_starved: bool = False
    profiler_note: str = ""


class RunVerdict(msgspec.Struct, kw_only=True):
    bottleneck: Optional[Bottleneck] = None  # the one most GPUs share, or the merged one
    source: str = "sampler"
    per_gpu: dict[str, GpuVerdict] = {}
    merged: Optional[MergedVerdict] = None
    profiler_effect: Optional[ProfilerEffect] = None


class ProfileWindow(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One window the profiler took (`run --profile`, re-armed in each new regime or asked with `gputriage profile`)."""

    index: int  # 1, 2, ... in the order they were asked for
    kind: str = "steady"  # steady (the steady state, or again), regime (the run changed regime), asked (by a user)
    why: str = ""  # why gputriage asked for it
    window_s: Optional[list[float]] = None  # unix seconds: the profiled window
    held_s: Optional[list[float]] = None  # unix seconds: from its start to the end of its export
    trace_file: Optional[str] = None  # where its trace was kept (--keep-trace, `gputriage profile --out`)
    bottleneck: Optional[Bottleneck] = None  # its trace's verdict
    confidence: Optional[float] = None
    gpu_idle_pct: Optional[float] = None
    regime: Optional[str] = None  # the sampler's regime of the timeline the window fell in
    used: bool = False  # the trace the run's verdict was merged with
    error: Optional[str] = None


class ProfileReport(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What `run --profile` profiled, and the trace's analysis."""

    trace: Optional[TraceReport] = None
    error: Optional[str] = None
    mode: str = "on"  # "on": at the steady state; "auto": only where the sampler cannot decide
    asked: list[str] = []  # why gputriage asked the profiler for each window (none: not profiled)
    log: list[str] = []
    window_s: Optional[list[float]] = None  # unix seconds: the profiled window
    held_s: Optional[list[float]] = None  # unix seconds: from the start request to the end of the export
    held_all_s: list[list[float]] = []  # every hold: each window's, and a start or export that wrote no trace
    kept_trace: Optional[str] = None
    windows: list[ProfileWindow] = []  # every window profiled, in order, with the regime it was taken in
    effects: dict[str, ProfilerEffect] = {}  # per GPU: what the profiler cost it (GPU-Util inside vs outside)


class HostSummary(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The host and the workload over the run: medians of its windows unless the name says max."""

    workload_cpu_pct: Optional[float] = None  # % of one core, all the workload's processes
    gpu_process_cpu_pct: Optional[float] = None  # those holding a GPU context (not DataLoader workers, helpers)
    write_mb_per_s: Optional[float] = None  # the workload's writes to storage
    top_thread_pct: Optional[float] = None
    max_core_pct: Optional[float] = None  # the host's busiest core
    iowait_pct: Optional[float] = None
    read_mb_per_s: Optional[float] = None  # the workload's reads (files, pipes, sockets)
    swap_in_max_pages_per_s: Optional[float] = None
    workload_rss_max_bytes: Optional[float] = None
    mem_available_min_bytes: Optional[float] = None


class RegimeThroughput(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The workload's own rate over one phase of the timeline."""

    regime: str
    start_s: float  # seconds since the run started
    end_s: float
    steps_per_s: Optional[float] = None
    samples_per_s: Optional[float] = None
    tokens_per_s: Optional[float] = None
    metric_median: Optional[float] = None  # `run --metric`: the median of the values read in this phase


class StepRegime(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A stretch of the run at one step rate (`diagnosis.run.step_regimes`): where the workload's own rate held, cut
    from its per-window step rate, with or without a GPU."""

    start_s: float  # seconds since the run started
    end_s: float
    windows: int  # the windows whose rates it spans
    steps_per_s: float
    samples_per_s: Optional[float] = None
    tokens_per_s: Optional[float] = None
    spread_share: Optional[float] = None  # the standard deviation of its windows' step rates, a share of its rate


class Throughput(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What the workload got done, as it reported it (`gputriage.step()`): over the steady state (start-up
    and shut-down left out), and per phase; with the model's FLOPs given, the model FLOP utilization."""

    source: str = "gputriage.step"  # or "output" (`run --metric`), or both
    steps: float = 0.0  # in all, start-up included
    samples: float = 0.0
    tokens: float = 0.0
    steady_s: float = 0.0
    steps_per_s: Optional[float] = None
    samples_per_s: Optional[float] = None
    tokens_per_s: Optional[float] = None
    metric_pattern: Optional[str] = None  # `run --metric`: the pattern read in the workload's output
    metric_median: Optional[float] = None  # the median of its values over the steady state
    metric_lines: int = 0  # lines it matched, in all
    by_regime: list[RegimeThroughput] = []
    achieved_tflops: Optional[float] = None  # the model's FLOPs per token (or step) x the steady rate
    peak_tflops: Optional[float] = None  # dense bf16 of the GPUs used, from the datasheet
    mfu_pct: Optional[float] = None  # achieved against that peak
    peak_source: Optional[str] = None
    bench_tflops: Optional[float] = None  # the bf16 GEMM rate `gputriage bench` measured on these GPUs (summed)
    mfu_bench_pct: Optional[float] = None  # achieved against that measured ceiling
    bench_source: Optional[str] = None
    steady_start_s: Optional[float] = None  # where the steady span starts, seconds since the run started
    steady_follows: Optional[str] = None  # "steps": the span where the workload stepped (no start-up, no tail)
    step_regimes: list[StepRegime] = []  # the run cut where its step rate changed (one: it held)


class LoaderWorkers(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A PyTorch DataLoader's worker processes over the windows they ran in (`sampling.loader_workers`): how many,
    their CPU, and the cores the workload may use."""

    workers: int  # running at once (the median over those windows)
    workers_max: int  # the most seen at once
    windows: int  # windows with a worker running
    cpu_pct: Optional[float] = None  # all of them together, % of one core (median)
    worker_cpu_pct: Optional[float] = None  # per worker, on average (median)
    workload_cpu_pct: Optional[float] = None  # the whole workload's, workers included (median)
    cores: Optional[float] = None  # the cores the workload may use: its affinity, capped by its cgroup quota (least)


class Cost(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The GPU time a run paid for, the share that did useful work, and (with a price) what both cost."""

    gpus: int
    gpu_hours: float  # wall time x GPUs used
    useful_gpu_hours: float  # sum of each window's activity x its length
    useful_pct: float
    measure: str  # "SM activity" (GPM) or "GPU-Util" (an upper bound)
    formula: str
    gpu_hours_at_twice: Optional[float] = None  # the same work at twice the activity (when that is possible)
    price_per_gpu_hour: Optional[float] = None  # the user's price; none is assumed
    currency: Optional[str] = None
    cost: Optional[float] = None
    waste_cost: Optional[float] = None
    note: Optional[str] = None


class BlindSpot(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A verdict the run could not reach (or only approximately), why, and what would see it."""

    bottleneck: Bottleneck
    why: str
    how: str = ""
    gpus: list[int] = []  # the GPUs it concerns (none: all)


class ProcessSummary(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A process seen with a CUDA context on a sampled GPU during the run."""

    gpu: int
    pid: int
    job: bool  # one of the workload's own processes (else another job's)
    samples: int = 0
    used_max_bytes: Optional[int] = None
    sm_util_mean_pct: Optional[float] = None  # NVML per-process utilization, mean over the samples that had it
    computing_share: Optional[float] = None  # of those samples, the share in which its kernels ran >= 5% of the time
    first_s: Optional[float] = None  # unix seconds it was first and last seen
    last_s: Optional[float] = None
    idle_longest_s: Optional[float] = None  # the longest stretch it held memory and ran no kernel (< 1%)
    idle_until_s: Optional[float] = None  # when that stretch ended (unix s)
    idle_used_min_bytes: Optional[int] = None  # the least memory it held through that stretch
    owner: Optional[ProcessOwner] = None  # its name, user, container and pod, where they could be read

    def whose(self, kind: str) -> str:
        """Whose process it is, as a report of that kind says it: the job's or another's for a run; for a watch,
        which has no job, its name and user."""
        if kind != "watch":
            return "this job" if self.job else "another job"
        o = self.owner
        return ", ".join(x for x in ((o.name, o.user) if o else ()) if x) or "a process"


class RunReport(msgspec.Struct, kw_only=True):
    schema: str = RUN_SCHEMA
    version: int = RUN_VERSION
    id: Optional[int] = None  # in the store
    kind: str = "run"  # run, watch or monitor
    command: list[str] = []
    started_s: Optional[float] = None
    ended_s: Optional[float] = None
    exit_code: Optional[int] = None
    complete: bool = True  # False: gputriage stopped before the run ended (judged from what it kept)
    samples: int = 0
    meta: RunMeta = msgspec.field(default_factory=RunMeta)
    verdict: RunVerdict = msgspec.field(default_factory=RunVerdict)
    findings: list[Finding] = []
    host: HostSummary = msgspec.field(default_factory=HostSummary)
    profile: Optional[ProfileReport] = None
    notes: list[str] = []  # what the report must say about itself (a store that failed, no GPU sampled)
    processes: list[ProcessSummary] = []  # every process seen on a sampled GPU
    blind_spots: list[BlindSpot] = []  # verdicts this run could not see: its GPUs' counters, no trace
    throughput: Optional[Throughput] = None  # what the workload reported through gputriage.step()
    cost: Optional[Cost] = None  # the GPU time paid for and the useful share of it
    baseline: Optional[Diff] = None  # `run --baseline NAME`: this run against it
    compile: Optional[CompileStats] = None  # what torch.compile did in the workload (Python workloads under run)
    stacks: Optional[HostStacks] = None  # where its Python threads spent the steady state (the stack sampler)
    ranks: Optional[RanksReport] = None  # a distributed job's ranks side by side: the straggler, the hangs
    # the allocator's snapshot the workload saved (Python workloads under run and monitor()), judged: at its
    # out-of-memory error, else the latest saved while its live memory grew
    memory: Optional[MemoryReport] = None
    loader: Optional[LoaderWorkers] = None  # its DataLoader's worker processes, their CPU and the cores they share

    def beside_verdict(self) -> list[Finding]:
        """The findings besides the verdict: a report stored before the verdict was stated once (`GpuVerdict.finding`)
        also listed it among its findings, made from the verdict's own figures."""
        return [f for f in self.findings if not any(_states(v, f) for v in self.verdict.per_gpu.values())]


SIGNALLED = 128  # the shell's convention: a command ended by signal N exits with 128 + N


def failed_by_itself(exit_code: int | None) -> bool:
    """The command exited with an error of its own (1-127), not ended by a signal."""
    return exit_code is not None and 0 < exit_code < SIGNALLED


def _states(v: GpuVerdict, f: Finding) -> bool:
    """`f` states the GPU's verdict: its finding, or (a report stored before it was named) the finding made from its
    figures."""
    if f.subject != f"gpu.{v.gpu}":
        return False
    if v.finding:
        return f.id == v.finding
    return bool(v.evidence) and all(f.evidence.get(k) == x for k, x in v.evidence.items())
