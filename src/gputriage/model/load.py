"""`load`: a serving endpoint under a load sweep — per step, its latencies and throughput, what the GPUs
and the server said meanwhile; the knee; the findings."""

from __future__ import annotations

from typing import Optional

import msgspec

from gputriage.model.finding import Finding

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
    concurrency: Optional[int] = None
    rate_per_s: Optional[float] = None
    by: str = ""  # "slo" (the highest load meeting it) or "saturation" (throughput stopped rising)
    why: str = ""


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
