"""Why a served model's latency rises under load, from the sweep's steps: the KV cache full, requests
queueing at the admission cap, the GPU underfilled at low concurrency, long prompts' prefill stalling
decode, decode at the memory-bandwidth ceiling, a CPU-bound server, VRAM without headroom, errors — and
the generator itself as the bottleneck, said instead of blaming the server."""

from __future__ import annotations

from typing import Any, Optional

from gputriage.diagnosis.serving.collapse import throughput_collapse
from gputriage.diagnosis.serving.shared_cpu import shared_cpu
from gputriage.diagnosis.serving.specs import (
    CLIENT_BOUND,
    CLIENT_CPU,
    DECODE_CEILING,
    DECODE_MEMORY_BOUND,
    ERRORS,
    GPU_UNDERFILLED,
    KV_CACHE_FULL,
    KV_FULL,
    LONG_COST,
    LONG_PROMPT_COST,
    PREFILL_INTERFERENCE,
    PREFILL_ITL,
    QUEUE_TTFT,
    QUEUEING,
    SCALING,
    SERVER_CPU_BOUND,
    SERVER_THREAD,
    UNDERFILLED_ACTIVE,
    VRAM_FULL,
    VRAM_HEADROOM,
)
from gputriage.diagnosis.serving.steps import failed
from gputriage.diagnosis.serving.steps import load_name as _load
from gputriage.diagnosis.serving.steps import load_x as _load_x
from gputriage.model.finding import Finding, Severity
from gputriage.model.load import LoadStep


def _activity(s: LoadStep) -> Optional[float]:
    vals = [
        v for v in (g.sm_active_pct if g.sm_active_pct is not None else g.util_pct for g in s.gpus) if v is not None
    ]
    return max(vals) if vals else None


def _kv(steps: list[LoadStep]) -> list[Finding]:
    hit = [
        s
        for s in steps
        if s.server and ((s.server.kv_cache_usage_max_pct or 0) >= KV_FULL.value or (s.server.preemptions or 0) > 0)
    ]
    if not hit:
        return []
    s = hit[0]
    assert s.server is not None
    ev: dict[str, Any] = {
        "at": _load(s),
        "kv_cache_usage_max_pct": s.server.kv_cache_usage_max_pct,
        "preemptions": s.server.preemptions,
        "itl_p99_ms": s.itl.p99_ms,
        "itl_p50_ms": s.itl.p50_ms,
        "server": s.server.source,
    }
    return [KV_CACHE_FULL.finding(ev, symptom=f"The KV cache filled up from {_load(s)}")]


def _queueing(steps: list[LoadStep]) -> list[Finding]:
    # each step against the one before it, and against the lightest: a server that stalls at one step (a KV
    # cache that thrashes) and queues beyond shows it only against the unloaded figures
    pairs = [(steps[j], steps[i]) for i in range(1, len(steps)) for j in sorted({i - 1, 0}, reverse=True)]
    for prev, s in pairs:
        sv, pv = s.server, prev.server
        capped = (
            sv is not None
            and (sv.waiting_max or 0) > 0
            and sv.running_max is not None
            and pv is not None
            and pv.running_max is not None
            and sv.running_max <= pv.running_max * 1.05
        )
        t0, t1, d0, d1 = prev.ttft.p50_ms, s.ttft.p50_ms, prev.tpot.p50_ms, s.tpot.p50_ms
        grew = _load_x(s) / max(_load_x(prev), 1e-9)
        decode_ms = (d1 or 0) * (s.output_tokens_mean or 0)
        # TPOT 0: the streams arrived whole (a client on a busy CPU read each in one chunk), so that step's TTFT
        # holds its decode too and says nothing of a wait (`whole_streams` says so in the report's notes)
        inferred = bool(
            t0
            and t1
            and d0
            and d1
            and t1 >= QUEUE_TTFT.value * t0
            and t1 / t0 >= 2 * d1 / d0
            and t1 - t0 >= decode_ms / 2
            and s.output_tokens_per_s < (1 + 0.5 * (grew - 1)) * prev.output_tokens_per_s
            and not (sv is not None and sv.waiting_max == 0)
        )  # the server says nothing waited
        if capped or inferred:
            ev: dict[str, Any] = {
                "from": _load(prev),
                "to": _load(s),
                "ttft_p50_ms": [t0, t1],
                "tpot_p50_ms": [d0, d1],
                "output_tokens_per_s": [prev.output_tokens_per_s, s.output_tokens_per_s],
            }
            if sv is not None:
                ev |= {"running_max": sv.running_max, "waiting_max": sv.waiting_max}
            cap = f" (the server runs {sv.running_max:g} at most)" if capped and sv and sv.running_max else ""
            return [
                QUEUEING.finding(
                    ev,
                    symptom=f"Requests queue beyond {_load(prev)}{cap}: TTFT "
                    f"{t0 or 0:,.0f} → {t1 or 0:,.0f} ms while TPOT holds",
                )
            ]
    return []


def _underfilled(steps: list[LoadStep]) -> list[Finding]:
    if len(steps) < 2:
        return []
    a, b = steps[0], steps[1]
    act = _activity(a)
    if act is None or act >= UNDERFILLED_ACTIVE.value or a.output_tokens_per_s <= 0:
        return []
    gain = b.output_tokens_per_s / a.output_tokens_per_s
    if gain < SCALING.value:
        return []
    return [
        GPU_UNDERFILLED.finding(
            {
                "at": _load(a),
                "activity_pct": act,
                "next": _load(b),
                "output_tokens_per_s": [a.output_tokens_per_s, b.output_tokens_per_s],
                "gain": round(gain, 2),
            }
        )
    ]


def _prefill(steps: list[LoadStep]) -> list[Finding]:
    hit = [s for s in steps if (s.itl_long_prompt_ratio or 0) >= PREFILL_ITL.value]
    if not hit:
        return []
    s = max(hit, key=lambda x: x.itl_long_prompt_ratio or 0)
    return [
        PREFILL_INTERFERENCE.finding(
            {
                "at": _load(s),
                "itl_long_prompt_ratio": s.itl_long_prompt_ratio,
                "itl_p50_ms": s.itl.p50_ms,
                "itl_p99_ms": s.itl.p99_ms,
            }
        )
    ]


def _long_prompt_cost(steps: list[LoadStep]) -> list[Finding]:
    worst: Optional[tuple[float, LoadStep, LoadStep]] = None
    for mix, control in zip(steps, steps[1:]):
        a, b = mix.tpot.p50_ms, control.tpot.p50_ms
        if control.control and not mix.control and a and b and (worst is None or a / b > worst[0]):
            worst = (a / b, mix, control)
    if worst is None or worst[0] < LONG_COST.value:
        return []
    ratio, mix, control = worst
    ev = {
        "at": _load(mix),
        "tpot_p50_ms": [mix.tpot.p50_ms, control.tpot.p50_ms],
        "tpot_control_ratio": round(ratio, 2),
        "output_tokens_per_s": [mix.output_tokens_per_s, control.output_tokens_per_s],
        "itl_long_prompt_ratio": mix.itl_long_prompt_ratio,
    }
    return [
        LONG_PROMPT_COST.finding(
            ev,
            symptom=f"Long prompts make every request's tokens {ratio:.1f}x slower "
            f"at {_load(mix)}: TPOT {control.tpot.p50_ms:,.1f} → "
            f"{mix.tpot.p50_ms:,.1f} ms against the same requests at one "
            f"length",
        )
    ]


def _server_cpu(steps: list[LoadStep]) -> list[Finding]:
    for s in steps:
        p, act = s.server_process, _activity(s)
        if p and (p.top_thread_pct or 0) >= SERVER_THREAD.value and act is not None and act < 60:
            return [
                SERVER_CPU_BOUND.finding(
                    {
                        "at": _load(s),
                        "pid": p.pid,
                        "top_thread": p.top_thread,
                        "top_thread_pct": p.top_thread_pct,
                        "process_cpu_pct": p.cpu_pct,
                        "gpu_activity_pct": act,
                    }
                )
            ]
    return []


def _vram(steps: list[LoadStep]) -> list[Finding]:
    for s in steps:
        for g in s.gpus:
            if g.used_max_bytes and g.total_bytes and g.used_max_bytes >= VRAM_FULL.value * g.total_bytes:
                ev = {
                    "at": _load(s),
                    "gpu": g.gpu,
                    "used_gib": round(g.used_max_bytes / 2**30, 1),
                    "total_gib": round(g.total_bytes / 2**30, 1),
                }
                return [VRAM_HEADROOM.finding(ev, subject=f"gpu.{g.gpu}")]
    return []


def _client(steps: list[LoadStep]) -> list[Finding]:
    for s in steps:
        # a step whose requests all failed at once spins the loop through them: its CPU says nothing
        busy = s.ok > 0 and (s.client_cpu_pct or 0) >= CLIENT_CPU.value
        if busy or s.errors.get("client_sockets"):
            return [
                CLIENT_BOUND.finding(
                    {
                        "at": _load(s),
                        "client_cpu_pct": s.client_cpu_pct,
                        "client_socket_errors": s.errors.get("client_sockets", 0),
                    }
                )
            ]
    return []


def _errors(steps: list[LoadStep]) -> list[Finding]:
    bad = [s for s in steps if failed(s)]
    if not bad:
        return []
    s = bad[0]
    share = sum(s.errors.values()) / s.requests
    kinds = sorted(s.errors, key=lambda k: -s.errors[k])
    cause = " ".join(dict.fromkeys(ERROR_CAUSES.get(k.split("_")[0], ERROR_CAUSES["http"]) for k in kinds))
    return [
        ERRORS.finding(
            {"from": _load(s), "errors": s.errors, "requests": s.requests},
            severity=Severity.critical if share >= 0.25 else Severity.warn,
            symptom=f"{share:.0%} of requests failed at {_load(s)}",
            cause=cause,
        )
    ]


ERROR_CAUSES = {  # what each kind of failure says, first the most frequent
    "http": "The server refused (HTTP 429/503: a cap or an overload) or failed (HTTP 500: often out of memory).",
    "timeout": "Requests did not finish within the client's timeout.",
    "connect": "Connections were refused or reset: the server was down or restarting.",
    "client": "This machine could not open more connections (its file or port limits).",
    "stream": "Streams broke, or carried events that are not JSON objects, or the server did not answer in HTTP.",
    "server": "The server reported errors inside the streams (`error` events): its log says which.",
    "empty": "Requests answered 200 but streamed no text: the model emitted only tokens that decode to nothing "
    "(special or unknown ids: a tokenizer smaller than the model's vocabulary) or the server does not "
    "stream.",
}


def _decode(steps: list[LoadStep], bandwidth_gbs: Optional[float], weight_bytes: Optional[float]) -> list[Finding]:
    if not steps or not bandwidth_gbs or not weight_bytes or not steps[0].tpot.p50_ms:
        return []
    ceiling = bandwidth_gbs * 1e9 / weight_bytes
    rate = 1000 / steps[0].tpot.p50_ms
    if rate < DECODE_CEILING.value * ceiling:
        return []
    return [
        DECODE_MEMORY_BOUND.finding(
            {
                "at": _load(steps[0]),
                "tokens_per_s_per_sequence": round(rate, 1),
                "ceiling_tokens_per_s": round(ceiling, 1),
                "bandwidth_gbs": bandwidth_gbs,
                "weight_gb": round(weight_bytes / 1e9, 2),
            }
        )
    ]


def findings(
    steps: list[LoadStep], bandwidth_gbs: Optional[float] = None, weight_bytes: Optional[float] = None
) -> list[Finding]:
    """The sweep's findings; steps in the order they ran (a sweep's is lightest first), a control step after the
    step it repeats."""
    mix = [s for s in steps if not s.control]  # every rule but the long prompts' cost judges the steps asked for
    out = (
        _client(mix)
        + _errors(mix)
        + _kv(mix)
        + _queueing(mix)
        + _prefill(mix)
        + _long_prompt_cost(steps)
        + _server_cpu(mix)
        + _vram(mix)
        + _underfilled(mix)
        + _decode(mix, bandwidth_gbs, weight_bytes)
        + throughput_collapse(mix)
        + shared_cpu(mix)
    )
    return sorted(out, key=lambda f: (-f.severity.rank, f.step))
