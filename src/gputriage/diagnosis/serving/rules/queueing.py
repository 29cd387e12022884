"""Requests queueing before they start: the server says so (requests waiting while running holds at a ceiling),
or the figures do (TTFT grows far faster than TPOT while throughput stops following the load)."""

from __future__ import annotations

from typing import Any

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.serving.evidence import LOAD, LoadEvidence
from gputriage.diagnosis.serving.steps import load_name, load_x
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording
from gputriage.model.load import LoadStep

QUEUE_TTFT = Threshold(
    "ttft_growth",
    2.0,
    "x",
    "TTFT growth from one step to the next while TPOT and throughput hold: requests wait before they start",
    "judgement",
)
RUNNING_HOLDS = Threshold(
    "running_growth_max",
    1.05,
    "x",
    "the most requests the server ran at a step against the step before: at or under it, running holds at a "
    "ceiling (its cap) while requests wait",
    "judgement",
)
TTFT_OVER_TPOT = Threshold(
    "ttft_over_tpot_growth",
    2.0,
    "x",
    "TTFT's growth against TPOT's between the two steps: at or above it, the time goes before the first token, "
    "not into decoding",
    "judgement",
)
WAIT_OF_DECODE = Threshold(
    "wait_decode_share",
    0.5,
    "of a request's decode time",
    "TTFT's growth against a request's decode time (TPOT x its output tokens) at the heavier step: at or above "
    "it, the added wait is more than a decode's jitter",
    "judgement",
)
GAIN_OF_LOAD = Threshold(
    "throughput_gain_share",
    0.5,
    "of the load's growth",
    "output tokens/s growth against the load's growth between the two steps: under it, the added requests did "
    "not add work (they waited)",
    "judgement",
)


def capped(prev: LoadStep, s: LoadStep) -> bool:
    """The server's counters: requests waited at `s` while it ran no more than at `prev`."""
    sv, pv = s.server, prev.server
    return (
        sv is not None
        and (sv.waiting_max or 0) > 0
        and sv.running_max is not None
        and pv is not None
        and pv.running_max is not None
        and sv.running_max <= pv.running_max * RUNNING_HOLDS.value
    )


def inferred(prev: LoadStep, s: LoadStep) -> bool:
    """The figures: TTFT grew, far faster than TPOT and by more than a decode's jitter, while throughput did not
    follow the load — unless the server says nothing waited. TPOT 0: the streams arrived whole (a client on a busy
    CPU read each in one chunk), so that step's TTFT holds its decode too and says nothing of a wait."""
    t0, t1, d0, d1 = prev.ttft.p50_ms, s.ttft.p50_ms, prev.tpot.p50_ms, s.tpot.p50_ms
    if not (t0 and t1 and d0 and d1) or (s.server is not None and s.server.waiting_max == 0):
        return False
    grew = load_x(s) / max(load_x(prev), 1e-9)
    decode_ms = d1 * (s.output_tokens_mean or 0)
    return (
        t1 >= QUEUE_TTFT.value * t0
        and t1 / t0 >= TTFT_OVER_TPOT.value * d1 / d0
        and t1 - t0 >= decode_ms * WAIT_OF_DECODE.value
        and s.output_tokens_per_s < (1 + GAIN_OF_LOAD.value * (grew - 1)) * prev.output_tokens_per_s
    )


def evaluate(ev: LoadEvidence) -> list[Finding]:
    # each step against the one before it, and against the lightest: a server that stalls at one step (a KV cache
    # that thrashes) and queues beyond shows it only against the unloaded figures
    steps = ev.asked
    pairs = [(steps[j], steps[i]) for i in range(1, len(steps)) for j in sorted({i - 1, 0}, reverse=True)]
    for prev, s in pairs:
        by_counters = capped(prev, s)
        if not (by_counters or inferred(prev, s)):
            continue
        evidence: dict[str, Any] = {
            "from": load_name(prev),
            "to": load_name(s),
            "ttft_p50_ms": [prev.ttft.p50_ms, s.ttft.p50_ms],
            "tpot_p50_ms": [prev.tpot.p50_ms, s.tpot.p50_ms],
            "output_tokens_per_s": [prev.output_tokens_per_s, s.output_tokens_per_s],
        }
        sv = s.server
        if sv is not None:
            evidence |= {"running_max": sv.running_max, "waiting_max": sv.waiting_max}
        fill = {"from": load_name(prev), "ttft_from_ms": prev.ttft.p50_ms or 0, "ttft_to_ms": s.ttft.p50_ms or 0}
        if by_counters and sv is not None and sv.running_max:
            return [RULE.finding(evidence, say="capped", fill={**fill, "running_max": sv.running_max})]
        return [RULE.finding(evidence, say="waiting", fill=fill)]
    return []


_QUEUE = "Requests queue beyond {from}"
_TTFT = ": TTFT {ttft_from_ms:,.0f} → {ttft_to_ms:,.0f} ms while TPOT holds"

RULE = Rule(
    FindingSpec(
        id="load.queueing",
        step=2,
        severity=Severity.warn,
        commands=LOAD,
        thresholds=(QUEUE_TTFT, RUNNING_HOLDS, TTFT_OVER_TPOT, WAIT_OF_DECODE, GAIN_OF_LOAD),
        symptom="Requests queue before they start: time to first token grows with load, far faster than token speed",
        cause="The server admits a fixed number of sequences (its admission cap, or what its KV cache holds); beyond "
        "it requests wait in its queue, so TTFT grows while decoding speed and throughput stay flat",
        decision="Raise the cap (vLLM --max-num-seqs, TGI --max-concurrent-requests) when the KV cache and VRAM have "
        "headroom; else add replicas behind a load balancer, and set client timeouts at the SLO",
        condition="the server reports requests waiting while the most it runs stays within "
        "{running_growth_max:g}x of the step before's; or, from one step to the next (or from the lightest), TTFT "
        "grows >= {ttft_growth:g}x, at least {ttft_over_tpot_growth:g}x as fast as TPOT and by at least "
        "{wait_decode_share:g} of a request's decode time, while output tokens/s grow by under "
        "{throughput_gain_share:g} of the load's growth (TPOT measured at both: a step whose streams arrived whole "
        "reads TPOT 0, its TTFT holds the decode, and it is not judged so)",
        says={
            "capped": Wording(symptom=_QUEUE + " (the server runs {running_max:g} at most)" + _TTFT),
            "waiting": Wording(symptom=_QUEUE + _TTFT),
        },
    ),
    evaluate,
)
