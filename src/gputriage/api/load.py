"""`load URL`: an OpenAI-compatible endpoint under a concurrency sweep or request-rate runs — latency
against throughput, the knee, what the GPUs and the server did, and why latency rises. The load generator
(gputriage.serving) measures; diagnosis.serving judges."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Callable, Optional, Sequence

from gputriage.api._common import (
    GputriageError,
    UsageError,
    check_store,
    keep_report,
    open_store,
    stored_report,
    stored_row,
)
from gputriage.backends.host import Host
from gputriage.backends.nvml import PynvmlBackend
from gputriage.diagnosis.serving.judge import judge
from gputriage.model.load import LoadReport, Slo
from gputriage.model.sample import Sample
from gputriage.model.specs import by_name
from gputriage.sampling.sampler import Cadences, Sampler
from gputriage.sampling.session import gpu_static
from gputriage.serving import slo as slo_grammar
from gputriage.serving.errors import LoadInputError, LoadOptionError
from gputriage.serving.measure import LoadConfig, measure


def parse_slo(text: str, percentile: int = 90) -> Slo:
    """`ttft=500ms,tpot=50ms` (ms or s) into an Slo."""
    try:
        return slo_grammar.parse_slo(text, percentile)
    except LoadOptionError as exc:
        raise UsageError(str(exc)) from None


def load(
    url: str,
    *,
    concurrency: Sequence[int] = (),
    max_concurrency: int = 32,
    rates: Sequence[float] = (),
    burstiness: float = 1.0,
    requests_per_step: int = 64,
    seconds_per_step: float = 60.0,
    warmup: int = 2,
    input_tokens: int = 256,
    output_tokens: int = 128,
    spread: float = 0.0,
    long_prompt_share: float = 0.0,
    long_prompt_factor: float = 8.0,
    long_prompt_control: bool = True,
    prompts_file: str | Path | None = None,
    chat: bool = False,
    model: str | None = None,
    slo: Slo | None = None,
    timeout_s: float = 120.0,
    ignore_eos: bool = False,
    tokenizer: str | Path | None = None,
    metrics: bool = True,
    sample_gpus: bool = True,
    weight_bytes: float | None = None,
    store: str | Path | bool | None = None,
    progress: Callable[[str], None] = lambda _s: None,
) -> LoadReport:
    """Load an OpenAI-compatible server step by step and judge it. `concurrency` (default 1, 2, 4, ... up to
    `max_concurrency`) or `rates` (requests/s, gamma-distributed gaps: `burstiness` 1 is Poisson, lower is
    burstier); every step bounded by `requests_per_step` and `seconds_per_step`; `warmup` requests first, not
    counted. Token counts are the server's `usage`. The GPUs here are sampled, the server's /metrics scraped.
    `tokenizer` (a local tokenizer.json or a folder holding one) counts the tokens a server's usage lacks.
    With long prompts in the mix, each step runs again with every prompt at the normal length (its control,
    unless `long_prompt_control` is off): what the long prompts cost the others is measured side by side.
    SIGINT or SIGTERM during the sweep ends it early: the report holds the steps that finished, `cut` says
    where, and it is kept when a step finished."""
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        raise GputriageError("`gputriage load` needs aiohttp: pip install 'gputriage[load]'") from None
    config = LoadConfig(
        url=url,
        concurrency=concurrency,
        max_concurrency=max_concurrency,
        rates=rates,
        burstiness=burstiness,
        requests_per_step=requests_per_step,
        seconds_per_step=seconds_per_step,
        warmup=warmup,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        spread=spread,
        long_prompt_share=long_prompt_share,
        long_prompt_factor=long_prompt_factor,
        long_prompt_control=long_prompt_control,
        prompts_file=Path(prompts_file) if prompts_file else None,
        chat=chat,
        model=model,
        slo=slo,
        timeout_s=timeout_s,
        ignore_eos=ignore_eos,
        tokenizer=Path(tokenizer) if tokenizer else None,
        metrics=metrics,
    )
    if weight_bytes is not None and not (math.isfinite(weight_bytes) and weight_bytes > 0):
        raise UsageError(f"the weights' size {weight_bytes:g} bytes: a positive number")
    check_store(store)  # a store that cannot be written is said before the sweep, not after it
    try:
        measured = measure(config, progress, _GpuSampler.start if sample_gpus else lambda _s: None)
    except LoadOptionError as exc:
        raise UsageError(str(exc)) from None
    except LoadInputError as exc:
        raise GputriageError(str(exc)) from None
    bandwidth = _bandwidth_gbs(store, measured.meta.gpu_names) if weight_bytes else None
    sweep = (
        ["--rate", ",".join(f"{r:g}" for r in rates)]
        if rates
        else ["--concurrency", ",".join(str(c) for c in concurrency)]
        if concurrency
        else []
    )
    report = judge(measured, bandwidth, weight_bytes, load_args=[measured.meta.url, *sweep])
    if report.steps:
        keep_report(report, "load", [measured.meta.url], store)
    return report


class _GpuSampler:
    """The GPUs here, sampled on a thread for the whole load (none when NVML sees none)."""

    def __init__(self, sampler: Sampler, names: list[str], totals: dict[int, int]) -> None:
        self.sampler, self.names, self.totals = sampler, names, totals

    @classmethod
    def start(cls, seconds: float) -> Optional[_GpuSampler]:
        nvml = PynvmlBackend(record=False, bounded=False)
        gpus, info, _system = gpu_static(nvml)
        if not gpus:
            return None
        sampler = Sampler(nvml, Host(), gpus, cadences=Cadences(gpu_s=0.2, ring_s=min(86_400.0, seconds + 900)))
        sampler.start()
        return cls(
            sampler,
            [info[i].name or "?" for i in gpus],
            {i: info[i].memory_total_bytes or 0 for i in gpus if info[i].memory_total_bytes},
        )

    def stop(self) -> list[Sample]:
        samples = list(self.sampler.recent)
        self.sampler.stop()
        return samples


def _bandwidth_gbs(store: str | Path | bool | None, gpu_names: list[str]) -> Optional[float]:
    """The GPU's memory bandwidth: what `bench` last measured here (memory.read), else the datasheet's."""
    try:
        db = open_store(store, readonly=True) if store is not False else None
    except GputriageError:
        db = None
    if db is not None:
        try:
            bench = db.last_bench()
        except sqlite3.Error:
            bench = None
        finally:
            db.close()
        rate = next((r.get("value") for r in (bench or {}).get("results", []) if r.get("name") == "memory.read"), None)
        if isinstance(rate, (int, float)):
            return float(rate)
    spec = by_name(gpu_names[0]) if gpu_names else None
    return spec.memory_bw_gbs if spec else None


def show_load(load_id: int, store: str | Path | None = None) -> LoadReport:
    """A load test kept in the store."""
    report: LoadReport = stored_report(load_id, "load", LoadReport, store)
    return report


def stored_kind(record_id: int, store: str | Path | None = None) -> Optional[str]:
    """`run`, `watch`, `monitor`, `load` or `fleet`: what a store id names (None: nothing)."""
    row = stored_row(record_id, store)
    return str(row["kind"]) if row else None
