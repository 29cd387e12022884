"""A collapse of throughput under load: a heavier step serves far fewer output tokens/s than a lighter one did,
without failing requests — the server does less work as it is given more (a KV cache that thrashes, swapping,
contention), which latency alone does not say."""

from __future__ import annotations

from typing import Any

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.serving.evidence import LOAD, LoadEvidence
from gputriage.diagnosis.serving.steps import failed, load_name, load_x
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording
from gputriage.model.load import LoadStep

COLLAPSE = Threshold(
    "throughput_collapse_share",
    0.5,
    "of the peak",
    "output tokens/s of a heavier step against "
    "the most a lighter step gave: at or under it, more load makes the server do less work",
    "judgement",
)
SEVERE = Threshold(
    "throughput_collapse_critical",
    0.25,
    "of the peak",
    "output tokens/s of a heavier step against the most a lighter step gave: at or under it, the collapse is critical",
    "judgement",
)


def worst(steps: tuple[LoadStep, ...]) -> tuple[float, LoadStep, LoadStep] | None:
    """The heaviest fall: (share of the peak, the lighter step at the peak, the step that fell); steps that failed
    requests are left to `load.errors`."""
    ordered = sorted(steps, key=load_x)
    out: tuple[float, LoadStep, LoadStep] | None = None
    for i, s in enumerate(ordered[1:], 1):
        peak = max(ordered[:i], key=lambda p: p.output_tokens_per_s)
        if failed(s) or not s.requests or peak.output_tokens_per_s <= 0:
            continue
        share = s.output_tokens_per_s / peak.output_tokens_per_s
        if share <= COLLAPSE.value and (out is None or share < out[0]):
            out = (share, peak, s)
    return out


def evaluate(ev: LoadEvidence) -> list[Finding]:
    fall = worst(ev.asked)
    if fall is None:
        return []
    share, peak, s = fall
    evidence: dict[str, Any] = {
        "peak_at": load_name(peak),
        "at": load_name(s),
        "output_tokens_per_s": [peak.output_tokens_per_s, s.output_tokens_per_s],
        "share": round(share, 3),
        "tpot_p50_ms": [peak.tpot.p50_ms, s.tpot.p50_ms],
        "ttft_p50_ms": [peak.ttft.p50_ms, s.ttft.p50_ms],
    }
    if s.server is not None and s.server.source != "unknown":
        evidence |= {"kv_cache_usage_max_pct": s.server.kv_cache_usage_max_pct, "preemptions": s.server.preemptions}
    fill = {
        "peak_tokens_per_s": peak.output_tokens_per_s,
        "peak_at": load_name(peak),
        "tokens_per_s": s.output_tokens_per_s,
        "at": load_name(s),
        "peak_tpot_ms": peak.tpot.p50_ms,
        "tpot_ms": s.tpot.p50_ms,
    }
    return [
        RULE.finding(
            evidence,
            severity=Severity.critical if share <= SEVERE.value else None,
            say="with_tpot" if peak.tpot.p50_ms and s.tpot.p50_ms else "fell",
            fill=fill,
        )
    ]


_FELL = "Throughput collapses under load: {peak_tokens_per_s:,.0f} tok/s at {peak_at}, {tokens_per_s:,.0f} at {at}"

RULE = Rule(
    FindingSpec(
        id="load.throughput_collapse",
        step=3,
        severity=Severity.warn,
        commands=LOAD,
        thresholds=(COLLAPSE, SEVERE),
        symptom="Throughput collapses under load: more requests in flight, fewer tokens out",
        cause="Past a load the server does less work, not the same work more slowly: a KV cache too small for the "
        "sequences in flight makes it preempt and recompute them (it thrashes), or memory swaps, or the "
        "sequences contend for a lock; each request added costs the others more than it brings",
        decision="Cap concurrent sequences below the load where it falls (vLLM --max-num-seqs, an admission limit in "
        "front), give the KV cache more memory (--gpu-memory-utilization, more cache blocks) or shorten the "
        "context; the server's log and /metrics (preemptions, KV cache usage) say which",
        condition="output tokens/s of a step without failed requests <= {throughput_collapse_share:g}x the most a "
        "lighter step gave (critical at or under {throughput_collapse_critical:g}x)",
        says={
            "fell": Wording(symptom=_FELL),
            "with_tpot": Wording(symptom=_FELL + " (TPOT {peak_tpot_ms:,.1f} → {tpot_ms:,.1f} ms)"),
        },
    ),
    evaluate,
)
