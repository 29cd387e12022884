"""`load`: a serving endpoint under a load sweep — per step, its latencies and throughput, what the GPUs
and the server said meanwhile; the knee; the findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import msgspec

from gputriage.model.finding import Finding
from gputriage.model.sample import Sample

LOAD_SCHEMA = "gputriage.load"
LOAD_VERSION = 1


class Percentiles(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Milliseconds."""

    p50_ms: Optional[float] = None
    p90_ms: Optional[float] = None
    p99_ms: Optional[float] = None
    mean_ms: Optional[float] = None
    n: int = 0


class GpuDuring(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One GPU over a step: medians, and the peaks that matter for headroom."""

    gpu: int
    util_pct: Optional[float] = None
    sm_active_pct: Optional[float] = None
    dram_active_pct: Optional[float] = None
    power_w: Optional[float] = None
    used_max_bytes: Optional[float] = None
    total_bytes: Optional[float] = None


class ServerDuring(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What the server's Prometheus /metrics said over a step (names differ per server: `source` says whose)."""

    source: str = ""  # vllm, sglang, tgi
    kv_cache_usage_max_pct: Optional[float] = None
    running_max: Optional[float] = None
    waiting_max: Optional[float] = None
    preemptions: Optional[float] = None  # during the step
    scrapes: int = 0


class ServerProcess(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The server's process on this machine (the one listening on the endpoint's port) over a step."""

    pid: int
    cpu_pct: Optional[float] = None  # % of one core, all threads
    top_thread_pct: Optional[float] = None
    top_thread: str = ""


class LoadStep(msgspec.Struct, kw_only=True, omit_defaults=True):
    concurrency: Optional[int] = None  # the sweep's step; or
    rate_per_s: Optional[float] = None  # a request-rate run's target
    control: bool = False  # the step before, again, with every prompt at the normal length (a mix's control)
    started_s: float = 0.0  # seconds since the load started
    duration_s: float = 0.0
    requests: int = 0  # completed (errors included), warm-up excluded
    ok: int = 0
    errors: dict[str, int] = {}  # by kind: http_429, http_500, timeout, connect, stream, ...
    ttft: Percentiles = msgspec.field(default_factory=Percentiles)
    itl: Percentiles = msgspec.field(default_factory=Percentiles)  # between streamed chunks
    tpot: Percentiles = msgspec.field(default_factory=Percentiles)  # (end - first token) / (output tokens - 1)
    e2e: Percentiles = msgspec.field(default_factory=Percentiles)
    requests_per_s: float = 0.0
    output_tokens_per_s: float = 0.0
    total_tokens_per_s: float = 0.0
    input_tokens_mean: Optional[float] = None
    output_tokens_mean: Optional[float] = None
    tokens_from: str = "usage"  # the server's `usage`, the user's "tokenizer", or "chunks" (one per streamed chunk)
    goodput_per_s: Optional[float] = None  # requests meeting every SLO, per second
    meets_slo: Optional[bool] = None
    itl_long_prompt_ratio: Optional[float] = None  # ITL while a long prompt's prefill ran / ITL otherwise
    client_cpu_pct: Optional[float] = None  # the generator's own CPU, % of one core
    machine_cpu_pct: Optional[float] = None  # this machine's CPUs, all cores, % busy over the step
    client_cpu_ms_per_1k_tokens: Optional[float] = None
    gpus: list[GpuDuring] = []
    server: Optional[ServerDuring] = None
    server_process: Optional[ServerProcess] = None


class Slo(msgspec.Struct, kw_only=True, omit_defaults=True):
    ttft_ms: Optional[float] = None
    tpot_ms: Optional[float] = None
    itl_ms: Optional[float] = None
    e2e_ms: Optional[float] = None
    percentile: int = 90  # the step meets the SLO when this percentile of each is within it


class LoadMeta(msgspec.Struct, kw_only=True, omit_defaults=True):
    url: str = ""
    endpoint: str = "/v1/completions"
    model: str = ""
    shape: str = "sweep"  # sweep (concurrency) or rate (Poisson arrivals)
    burstiness: Optional[float] = None
    input_tokens: Optional[int] = None  # asked, mean; the server's usage says what it counted
    output_tokens: Optional[int] = None
    long_prompt_share: Optional[float] = None  # a mix: this share of prompts `long_prompt_factor` times longer
    long_prompt_factor: Optional[float] = None
    prompts_file: Optional[str] = None
    requests_per_step: int = 0
    seconds_per_step: float = 0.0
    warmup_requests: int = 0
    timeout_s: float = 0.0
    slo: Optional[Slo] = None
    hostname: str = ""
    gputriage: str = ""
    local_server: bool = False  # its process was found on this machine
    gpu_names: list[str] = []


class Knee(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Where more load stops paying. No load (neither field set): none within the sweep, `why` says why."""

    concurrency: Optional[int] = None
    rate_per_s: Optional[float] = None
    by: str = ""  # "slo" (the highest load meeting it), "saturation" (throughput stopped rising), "errors", "none"
    why: str = ""


class LoadCut(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A sweep stopped by a signal: the steps before `step` finished and are kept; `step` was cut."""

    signal: str  # SIGINT, SIGTERM
    step: int  # 1-based, of `steps`
    steps: int


class LoadReport(msgspec.Struct, kw_only=True):
    schema: str = LOAD_SCHEMA
    version: int = LOAD_VERSION
    id: Optional[int] = None  # in the store
    started_s: Optional[float] = None
    ended_s: Optional[float] = None
    meta: LoadMeta = msgspec.field(default_factory=LoadMeta)
    steps: list[LoadStep] = []
    knee: Optional[Knee] = None
    findings: list[Finding] = []
    notes: list[str] = []
    cut: Optional[LoadCut] = None


# What the load generator measured, before it is judged: the client's records (times are
# `time.perf_counter()` seconds), the server's scrapes, the GPUs' samples.


@dataclass
class RequestRecord:
    """One streamed request: when it was sent, when each chunk of text came, what the server's `usage` counted,
    or what went wrong."""

    sent_s: float
    end_s: float = 0.0
    first_s: Optional[float] = None
    chunk_s: list[float] = field(default_factory=list)  # each chunk that carried text
    input_tokens: Optional[int] = None  # the server's usage
    output_tokens: Optional[int] = None
    error: Optional[str] = None  # http_<status>, timeout, connect, client_sockets, stream, server_error, empty
    long_prompt: bool = False
    text: list[str] = field(default_factory=list)  # the streamed text, kept only to count its tokens
    prompt: str = ""  # likewise
    tokens_from: str = "usage"  # of output_tokens: or "tokenizer" when the server's usage lacked them


@dataclass
class StepRecord:
    """One step as the client ran it."""

    concurrency: Optional[int]
    rate_per_s: Optional[float]
    t0_s: float
    t1_s: float
    records: list[RequestRecord]
    client_cpu_s: float  # the event loop thread's CPU time over the step
    control: bool = False


@dataclass
class ServerSample:
    """The server (and this machine) read once."""

    t_s: float
    metrics: dict[str, float] = field(default_factory=dict)  # Prometheus: name -> value summed over labels
    process_cpu_s: Optional[float] = None
    threads_cpu_s: dict[int, float] = field(default_factory=dict)
    machine_busy_s: Optional[float] = None  # this machine's CPU time spent busy, all cores, since boot
    machine_cores: int = 0


@dataclass
class LoadMeasurement:
    """A load as measured: its plan's meta, each finished step, what the server, this machine and its GPUs did."""

    meta: LoadMeta
    started_s: float  # Unix seconds
    load_t0_s: float  # perf_counter seconds when the load started
    unix_offset_s: float  # perf_counter seconds + this = Unix seconds (the GPU samples' clock)
    steps: list[StepRecord] = field(default_factory=list)
    server: list[ServerSample] = field(default_factory=list)
    server_pid: Optional[int] = None
    thread_names: dict[int, str] = field(default_factory=dict)  # the server's threads that kept a core half busy
    gpu_samples: list[Sample] = field(default_factory=list)
    gpu_totals: dict[int, int] = field(default_factory=dict)  # VRAM bytes by GPU index
    notes: list[str] = field(default_factory=list)
    cut: Optional[LoadCut] = None
