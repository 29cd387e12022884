"""A collapse of throughput under load: a heavier step serves far fewer output tokens/s than a lighter one did,
without failing requests — the server does less work as it is given more (a KV cache that thrashes, swapping,
contention), which latency alone does not say."""

from __future__ import annotations

from typing import Any

from gputriage.diagnosis.serving.steps import failed, load_name, load_x
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold
from gputriage.model.load import LoadStep

COLLAPSE = Threshold(
    "throughput_collapse_share",
    0.5,
    "of the peak",
    "output tokens/s of a heavier step against "
    "the most a lighter step gave: at or under it, more load makes the server do less work",
    "judgement",
)
SEVERE = 0.25  # of the peak: critical

THROUGHPUT_COLLAPSE = FindingSpec(
    id="load.throughput_collapse",
    step=3,
    severity=Severity.warn,
    commands=("load",),
    thresholds=(COLLAPSE,),
    symptom="Throughput collapses under load: more requests in flight, fewer tokens out",
    cause="Past a load the server does less work, not the same work more slowly: a KV cache too small for the "
    "sequences in flight makes it preempt and recompute them (it thrashes), or memory swaps, or the "
    "sequences contend for a lock; each request added costs the others more than it brings",
    decision="Cap concurrent sequences below the load where it falls (vLLM --max-num-seqs, an admission limit in "
    "front), give the KV cache more memory (--gpu-memory-utilization, more cache blocks) or shorten the "
    "context; the server's log and /metrics (preemptions, KV cache usage) say which",
    condition="output tokens/s of a step without failed requests <= the threshold x the most a lighter step gave "
    "(critical at a quarter)",
)


def throughput_collapse(steps: list[LoadStep]) -> list[Finding]:
    """The worst step against the best lighter one; steps in the order they ran, controls left out."""
    ordered = sorted(steps, key=load_x)
    worst: tuple[float, LoadStep, LoadStep] | None = None
    for i, s in enumerate(ordered[1:], 1):
        peak = max(ordered[:i], key=lambda p: p.output_tokens_per_s)
        if failed(s) or not s.requests or peak.output_tokens_per_s <= 0:
            continue
        share = s.output_tokens_per_s / peak.output_tokens_per_s
        if share <= COLLAPSE.value and (worst is None or share < worst[0]):
            worst = (share, peak, s)
    if worst is None:
        return []
    share, peak, s = worst
    ev: dict[str, Any] = {
        "peak_at": load_name(peak),
        "at": load_name(s),
        "output_tokens_per_s": [peak.output_tokens_per_s, s.output_tokens_per_s],
        "share": round(share, 3),
        "tpot_p50_ms": [peak.tpot.p50_ms, s.tpot.p50_ms],
        "ttft_p50_ms": [peak.ttft.p50_ms, s.ttft.p50_ms],
    }
    if s.server is not None and s.server.source != "unknown":
        ev |= {"kv_cache_usage_max_pct": s.server.kv_cache_usage_max_pct, "preemptions": s.server.preemptions}
    return [
        THROUGHPUT_COLLAPSE.finding(
            ev,
            severity=Severity.critical if share <= SEVERE else None,
            symptom=f"Throughput collapses under load: {peak.output_tokens_per_s:,.0f} tok/s at {load_name(peak)}, "
            f"{s.output_tokens_per_s:,.0f} at {load_name(s)}"
            + (
                f" (TPOT {peak.tpot.p50_ms:,.1f} → {s.tpot.p50_ms:,.1f} ms)"
                if peak.tpot.p50_ms and s.tpot.p50_ms
                else ""
            ),
        )
    ]
