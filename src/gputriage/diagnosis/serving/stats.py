"""A load step's figures from its requests: TTFT, inter-token latency, TPOT and end-to-end latency
percentiles, requests and tokens per second, goodput under the SLOs; what the GPUs, the server's metrics,
its process and this machine's CPUs did meanwhile."""

from __future__ import annotations

import math
from typing import Optional, Sequence

from gputriage.diagnosis.serving.steps import ERROR_SHARE
from gputriage.model.finding import Threshold
from gputriage.model.load import (
    GpuDuring,
    LoadStep,
    Percentiles,
    RequestRecord,
    ServerDuring,
    ServerProcess,
    ServerSample,
    Slo,
    StepRecord,
)
from gputriage.model.numbers import median
from gputriage.model.sample import Sample

# each server's own names for the same things: (source, KV cache usage 0-1, running, waiting, preemptions counter)
SERVER_METRICS = (
    (
        "vllm",
        ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
        ("vllm:num_requests_running",),
        ("vllm:num_requests_waiting",),
        ("vllm:num_preemptions_total", "vllm:num_preemptions"),
    ),
    (
        "sglang",
        ("sglang:token_usage",),
        ("sglang:num_running_reqs",),
        ("sglang:num_queue_reqs",),
        ("sglang:num_retracted_reqs_total", "sglang:num_retracted_reqs"),
    ),
    ("tgi", (), ("tgi_batch_current_size",), ("tgi_queue_size",), ()),
)
MIN_ITL_SAMPLES = Threshold(
    "itl_samples_min",
    20,
    "intervals",
    "inter-token intervals on each side (while a long prompt is prefilled, and the rest of the time) before their "
    "means are compared: fewer, and one stall decides the ratio",
    "judgement",
)


def quantile(xs: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks, of sorted values."""
    if len(xs) == 1:
        return xs[0]
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def percentiles(values_s: Sequence[float]) -> Percentiles:
    if not values_s:
        return Percentiles()
    xs = sorted(v * 1000 for v in values_s)
    return Percentiles(
        p50_ms=round(quantile(xs, 0.5), 2),
        p90_ms=round(quantile(xs, 0.9), 2),
        p99_ms=round(quantile(xs, 0.99), 2),
        mean_ms=round(sum(xs) / len(xs), 2),
        n=len(xs),
    )


def _out_tokens(r: RequestRecord) -> int:
    return r.output_tokens if r.output_tokens is not None else len(r.chunk_s)


def _tokens_from(ok: list[RequestRecord]) -> str:
    """Where the step's output token counts come from: the server's usage, the user's tokenizer, or (when any
    request has neither) one token per streamed chunk."""
    if not ok or any(r.output_tokens is None for r in ok):
        return "chunks"
    return "tokenizer" if any(r.tokens_from == "tokenizer" for r in ok) else "usage"


def _tpot_s(r: RequestRecord) -> Optional[float]:
    n = _out_tokens(r)
    return (r.end_s - r.first_s) / (n - 1) if r.first_s is not None and n > 1 else None


def _meets(r: RequestRecord, slo: Slo) -> bool:
    if r.error is not None or r.first_s is None:
        return False
    tpot = _tpot_s(r)
    gaps = [b - a for a, b in zip(r.chunk_s, r.chunk_s[1:])]
    return (
        (slo.ttft_ms is None or (r.first_s - r.sent_s) * 1000 <= slo.ttft_ms)
        and (slo.tpot_ms is None or tpot is None or tpot * 1000 <= slo.tpot_ms)
        and (slo.itl_ms is None or not gaps or max(gaps) * 1000 <= slo.itl_ms)
        and (slo.e2e_ms is None or (r.end_s - r.sent_s) * 1000 <= slo.e2e_ms)
    )


def _step_meets(step: LoadStep, slo: Slo) -> bool:
    q = {50: "p50_ms", 90: "p90_ms", 99: "p99_ms"}.get(slo.percentile, "p90_ms")
    for bound, pct in (
        (slo.ttft_ms, step.ttft),
        (slo.tpot_ms, step.tpot),
        (slo.itl_ms, step.itl),
        (slo.e2e_ms, step.e2e),
    ):
        value = getattr(pct, q)
        if bound is not None and (value is None or value > bound):
            return False
    return step.requests > 0 and sum(step.errors.values()) <= ERROR_SHARE.value * step.requests


def _long_prompt_ratio(ok: list[RequestRecord]) -> Optional[float]:
    """Mean ITL of the other requests while a long prompt was in prefill (sent, first token), against the
    mean ITL the rest of the time: above 1, long prompts' prefill stalls the decoding ones. Means, not
    medians: a stall lengthens a few intervals a lot, which a median does not see."""
    windows = [(r.sent_s, r.first_s) for r in ok if r.long_prompt and r.first_s is not None]
    if not windows:
        return None
    inside: list[float] = []
    outside: list[float] = []
    for r in ok:
        for a, b in zip(r.chunk_s, r.chunk_s[1:]):
            (inside if any(w0 < b and a < w1 for w0, w1 in windows) else outside).append(b - a)
    if len(inside) < MIN_ITL_SAMPLES.value or len(outside) < MIN_ITL_SAMPLES.value or sum(outside) <= 0:
        return None
    return round((sum(inside) / len(inside)) / (sum(outside) / len(outside)), 2)


def _gpus(samples: list[Sample], t0_unix: float, t1_unix: float, totals: dict[int, int]) -> list[GpuDuring]:
    inside = [s for s in samples if t0_unix <= s.t_s <= t1_unix]
    out = []
    for i in sorted({g.index for s in inside for g in s.gpus}):
        gs = [g for s in inside for g in s.gpus if g.index == i]

        def med(vals: list[Optional[float]]) -> Optional[float]:
            xs = [v for v in vals if v is not None]
            return round(median(xs), 1) if xs else None

        used = [g.used_bytes for g in gs if g.used_bytes is not None]
        power = med([g.power_mw / 1000 if g.power_mw is not None else None for g in gs])
        out.append(
            GpuDuring(
                gpu=i,
                util_pct=med([g.util_pct for g in gs]),
                sm_active_pct=med([g.sm_active_pct for g in gs]),
                dram_active_pct=med([g.dram_active_pct for g in gs]),
                power_w=power,
                used_max_bytes=float(max(used)) if used else None,
                total_bytes=float(totals[i]) if i in totals else None,
            )
        )
    return out


def _first(metrics: dict[str, float], names: Sequence[str]) -> Optional[float]:
    return next((metrics[n] for n in names if n in metrics), None)


def _server(samples: list[ServerSample], t0: float, t1: float) -> Optional[ServerDuring]:
    inside = [s for s in samples if t0 <= s.t_s <= t1 and s.metrics]
    before = [s for s in samples if s.t_s < t0 and s.metrics]
    if not inside:
        return None
    for source, kv, running, waiting, preempt in SERVER_METRICS:
        if not any(_first(s.metrics, running) is not None for s in inside):
            continue
        out = ServerDuring(source=source, scrapes=len(inside))
        kvs = [v for v in (_first(s.metrics, kv) for s in inside) if v is not None]
        out.kv_cache_usage_max_pct = round(100 * max(kvs), 1) if kvs else None
        runs = [v for v in (_first(s.metrics, running) for s in inside) if v is not None]
        waits = [v for v in (_first(s.metrics, waiting) for s in inside) if v is not None]
        out.running_max, out.waiting_max = (max(runs) if runs else None), (max(waits) if waits else None)
        counts = [v for v in (_first(s.metrics, preempt) for s in (before[-1:] + inside)) if v is not None]
        out.preemptions = counts[-1] - counts[0] if len(counts) > 1 else None
        return out
    return ServerDuring(source="unknown", scrapes=len(inside))


def _process(
    samples: list[ServerSample], pid: Optional[int], t0: float, t1: float, names: dict[int, str]
) -> Optional[ServerProcess]:
    inside = [s for s in samples if t0 <= s.t_s <= t1 and s.process_cpu_s is not None]
    if pid is None or not inside[1:]:  # a rate needs two readings
        return None
    a, b = inside[0], inside[-1]
    span = b.t_s - a.t_s
    if span <= 0 or a.process_cpu_s is None or b.process_cpu_s is None:
        return None
    deltas = {tid: cpu - a.threads_cpu_s.get(tid, 0.0) for tid, cpu in b.threads_cpu_s.items()}
    top = max(deltas, key=lambda k: deltas[k]) if deltas else None
    return ServerProcess(
        pid=pid,
        cpu_pct=round(100 * (b.process_cpu_s - a.process_cpu_s) / span, 1),
        top_thread_pct=round(100 * deltas[top] / span, 1) if top is not None else None,
        top_thread=names.get(top, "") if top is not None else "",
    )


def _machine_cpu_pct(samples: list[ServerSample], t0: float, t1: float) -> Optional[float]:
    """This machine's CPUs over the step, % busy of all cores: between the readings that bracket it (the last
    before it starts and the first after it ends, about a second outside it at most)."""
    read = [s for s in samples if s.machine_busy_s is not None and s.machine_cores]
    a = next((s for s in reversed(read) if s.t_s <= t0), read[0] if read else None)
    b = next((s for s in read if s.t_s >= t1), read[-1] if read else None)
    if a is None or b is None or b.t_s - a.t_s <= 0 or a.machine_busy_s is None or b.machine_busy_s is None:
        return None
    busy = (b.machine_busy_s - a.machine_busy_s) / ((b.t_s - a.t_s) * b.machine_cores)
    return round(min(100.0, max(0.0, 100 * busy)), 1)


def summarize(
    raw: StepRecord,
    *,
    load_t0: float,
    unix_offset: float,
    slo: Optional[Slo],
    gpu_samples: list[Sample],
    gpu_totals: dict[int, int],
    server: list[ServerSample],
    server_pid: Optional[int],
    thread_names: Optional[dict[int, str]] = None,
) -> LoadStep:
    """One step's figures. Times are perf_counter seconds; `unix_offset` turns them into the samples' clock."""
    ok = [r for r in raw.records if r.error is None]
    errors: dict[str, int] = {}
    for r in raw.records:
        if r.error is not None:
            errors[r.error] = errors.get(r.error, 0) + 1
    duration = max(raw.t1_s - raw.t0_s, 1e-9)
    out_tokens = sum(_out_tokens(r) for r in ok)
    in_tokens = [r.input_tokens for r in ok if r.input_tokens is not None]
    step = LoadStep(
        concurrency=raw.concurrency,
        rate_per_s=raw.rate_per_s,
        control=raw.control,
        started_s=round(raw.t0_s - load_t0, 2),
        duration_s=round(duration, 2),
        requests=len(raw.records),
        ok=len(ok),
        errors=errors,
        ttft=percentiles([r.first_s - r.sent_s for r in ok if r.first_s is not None]),
        itl=percentiles([b - a for r in ok for a, b in zip(r.chunk_s, r.chunk_s[1:])]),
        tpot=percentiles([t for t in (_tpot_s(r) for r in ok) if t is not None]),
        e2e=percentiles([r.end_s - r.sent_s for r in ok]),
        requests_per_s=round(len(ok) / duration, 3),
        output_tokens_per_s=round(out_tokens / duration, 1),
        total_tokens_per_s=round((out_tokens + sum(in_tokens)) / duration, 1),
        input_tokens_mean=round(sum(in_tokens) / len(in_tokens), 1) if in_tokens else None,
        output_tokens_mean=round(out_tokens / len(ok), 1) if ok else None,
        tokens_from=_tokens_from(ok),
        itl_long_prompt_ratio=_long_prompt_ratio(ok),
        client_cpu_pct=round(100 * raw.client_cpu_s / duration, 1),
        client_cpu_ms_per_1k_tokens=round(raw.client_cpu_s * 1e6 / out_tokens, 2) if out_tokens else None,
    )
    if slo is not None:
        step.goodput_per_s = round(sum(1 for r in ok if _meets(r, slo)) / duration, 3)
        step.meets_slo = _step_meets(step, slo)
    step.gpus = _gpus(gpu_samples, raw.t0_s + unix_offset, raw.t1_s + unix_offset, gpu_totals)
    step.server = _server(server, raw.t0_s, raw.t1_s)
    step.server_process = _process(server, server_pid, raw.t0_s, raw.t1_s, thread_names or {})
    step.machine_cpu_pct = _machine_cpu_pct(server, raw.t0_s, raw.t1_s)
    return step
