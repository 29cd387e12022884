"""A load test as measured, from its options to its raw records: the options checked, the server found, the
prompts shaped, the steps driven, the server and this machine watched meanwhile. Judging is
diagnosis.serving's."""

from __future__ import annotations

import math
import signal
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Protocol

from gputriage.backends.tokenizer import TokenizerError, token_counter
from gputriage.model.load import LoadCut, LoadMeasurement, LoadMeta, RequestRecord, Slo
from gputriage.model.sample import Sample
from gputriage.model.version import __version__
from gputriage.serving import server
from gputriage.serving.arrivals import check_rates, concurrency_steps
from gputriage.serving.errors import LoadInputError, LoadOptionError
from gputriage.serving.prompts import MAX_PROMPT_TOKENS, Prompts
from gputriage.serving.sweep import LoadPlan, drive
from gputriage.serving.watch import ServerWatch

MAX_CONCURRENCY = 1 << 16


@dataclass
class LoadConfig:
    """What `gputriage load` was asked (see api.load for each option)."""

    url: str
    concurrency: Sequence[int] = ()
    max_concurrency: int = 32
    rates: Sequence[float] = ()
    burstiness: float = 1.0
    requests_per_step: int = 64
    seconds_per_step: float = 60.0
    warmup: int = 2
    input_tokens: int = 256
    output_tokens: int = 128
    spread: float = 0.0
    long_prompt_share: float = 0.0
    long_prompt_factor: float = 8.0
    long_prompt_control: bool = True
    prompts_file: Optional[Path] = None
    chat: bool = False
    model: Optional[str] = None
    slo: Optional[Slo] = None
    timeout_s: float = 120.0
    ignore_eos: bool = False
    tokenizer: Optional[Path] = None
    metrics: bool = True
    steps: list[int] = field(default_factory=list)  # the sweep's concurrencies, once checked


class GpuWatch(Protocol):
    """This machine's GPUs sampled over the load (the API starts it: sampling is not the generator's)."""

    names: list[str]
    totals: dict[int, int]  # VRAM bytes by GPU index

    def stop(self) -> list[Sample]: ...


def _finite(name: str, value: float, low: float, low_ok: bool = False, high: float = math.inf) -> None:
    ok = math.isfinite(value) and (value >= low if low_ok else value > low) and value <= high
    if not ok:
        bound = f">= {low:g}" if low_ok else f"> {low:g}"
        raise LoadOptionError(f"{name} {value:g}: a number {bound}" + (f" and <= {high:g}" if high < math.inf else ""))


def check(c: LoadConfig) -> None:
    """Every option a number in its range, else a LoadOptionError (one line)."""
    if c.rates and c.concurrency:
        raise LoadOptionError("a concurrency sweep or request rates, not both")
    for n in list(c.concurrency) + [c.max_concurrency]:
        if not 1 <= n <= MAX_CONCURRENCY:
            raise LoadOptionError(f"concurrency {n}: from 1 to {MAX_CONCURRENCY:,}")
    if c.requests_per_step < 1 or c.warmup < 0 or c.input_tokens < 1 or c.output_tokens < 1:
        raise LoadOptionError("requests per step, input and output tokens must be positive, warm-up requests >= 0")
    _finite("--seconds", c.seconds_per_step, 0)
    _finite("--timeout", c.timeout_s, 0)
    _finite("--spread", c.spread, 0, low_ok=True)
    _finite("--long-prompts", c.long_prompt_share, 0, low_ok=True, high=1)
    _finite("--long-factor", c.long_prompt_factor, 0)
    check_rates(c.rates, c.burstiness)
    longest = c.input_tokens * (1 + 3 * c.spread) * (c.long_prompt_factor if c.long_prompt_share else 1)
    if longest > MAX_PROMPT_TOKENS or c.output_tokens > MAX_PROMPT_TOKENS:
        raise LoadOptionError(f"prompts of up to {longest:,.0f} tokens: at most {MAX_PROMPT_TOKENS:,} a prompt")
    c.steps = [] if c.rates else (list(c.concurrency) or concurrency_steps(c.max_concurrency))


def _counter(tokenizer: Optional[Path]) -> Optional[Callable[[str], int]]:
    try:
        return token_counter(tokenizer) if tokenizer else None
    except TokenizerError as exc:
        raise LoadInputError(str(exc)) from None


def _fill_counts(records: list[RequestRecord], count: Optional[Callable[[str], int]]) -> list[RequestRecord]:
    """The token counts a server's usage lacked, from the user's tokenizer; the kept text is dropped."""
    if count is None:
        return records
    for r in records:
        if r.input_tokens is None and r.prompt:
            r.input_tokens = count(r.prompt)
        if r.output_tokens is None and r.text:
            r.output_tokens, r.tokens_from = count("".join(r.text)), "tokenizer"
        r.text, r.prompt = [], ""
    return records


def measure(
    c: LoadConfig,
    progress: Callable[[str], None] = lambda _s: None,
    start_gpus: Callable[[float], Optional[GpuWatch]] = lambda _s: None,
) -> LoadMeasurement:
    """Check the options, find the server, run the steps; `start_gpus(seconds)` samples this machine's GPUs over
    the load. A signal (SIGINT, SIGTERM) ends the sweep early: the measurement keeps the steps that finished
    and says where it was cut."""
    check(c)
    count = _counter(c.tokenizer)
    prompts = Prompts(
        c.input_tokens, c.output_tokens, c.spread, c.long_prompt_share, c.long_prompt_factor, c.prompts_file
    )
    base = server.base_url(c.url)
    server.reachable(base, min(server.CONNECT_TIMEOUT_S, c.timeout_s))
    endpoint = "/v1/chat/completions" if c.chat else "/v1/completions"
    served = c.model or server.served_model(base, min(server.CONNECT_TIMEOUT_S, c.timeout_s))
    control = (
        prompts.control
        if c.long_prompt_control and c.long_prompt_share and c.long_prompt_factor != 1 and not prompts.rows
        else None
    )
    plan = LoadPlan(
        url=base + endpoint,
        model=served,
        endpoint=endpoint,
        prompts=prompts,
        concurrencies=c.steps,
        rates=list(c.rates),
        burstiness=c.burstiness,
        requests_per_step=c.requests_per_step,
        seconds_per_step=c.seconds_per_step,
        warmup=c.warmup,
        timeout_s=c.timeout_s,
        ignore_eos=c.ignore_eos,
        control=control,
        keep_text=count is not None,
    )
    pid = server.local_pid(base)
    meta = LoadMeta(
        url=base,
        endpoint=endpoint,
        model=served,
        shape="rate" if c.rates else "sweep",
        burstiness=c.burstiness if c.rates else None,
        input_tokens=None if prompts.rows else c.input_tokens,
        output_tokens=c.output_tokens,
        long_prompt_share=c.long_prompt_share or None,
        long_prompt_factor=c.long_prompt_factor if c.long_prompt_share else None,
        prompts_file=str(c.prompts_file) if c.prompts_file else None,
        requests_per_step=c.requests_per_step,
        seconds_per_step=c.seconds_per_step,
        warmup_requests=c.warmup,
        timeout_s=c.timeout_s,
        slo=c.slo,
        hostname=socket.gethostname(),
        gputriage=__version__,
        local_server=pid is not None,
    )
    out = LoadMeasurement(meta=meta, started_s=time.time(), load_t0_s=0.0, unix_offset_s=0.0, server_pid=pid)
    metrics_url, note = server.metrics_url(base) if c.metrics else (None, None)
    if note:
        out.notes.append(note)
    gpus = start_gpus(len(plan.runs()) * c.seconds_per_step)
    meta.gpu_names = gpus.names if gpus is not None else []
    watch = ServerWatch(metrics_url, pid)
    watch.start()
    out.unix_offset_s = time.time() - time.perf_counter()
    out.load_t0_s = time.perf_counter()
    try:
        steps, signum = drive(plan, progress, lambda warm: prompts.calibrate(_fill_counts(warm, count)))
    finally:
        watch.stop()
        out.gpu_samples = gpus.stop() if gpus is not None else []
    for step in steps:
        _fill_counts(step.records, count)
    out.steps, out.server, out.thread_names = steps, watch.samples, watch.thread_names
    out.gpu_totals = gpus.totals if gpus is not None else {}
    if watch.metrics_error and c.metrics:
        out.notes.append(f"the server's metrics could not be read: {watch.metrics_error}")
    if signum is not None:
        out.cut = LoadCut(signal=signal.Signals(signum).name, step=len(steps) + 1, steps=len(plan.runs()))
    return out
