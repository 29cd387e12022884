"""The server's CPU side as the bottleneck: its busiest thread at a full core while the GPU waits."""

from __future__ import annotations

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.serving.evidence import LOAD, LoadEvidence, activity_pct
from gputriage.diagnosis.serving.steps import load_name
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold

SERVER_THREAD = Threshold("top_thread_pct", 90.0, "% of a core", "the server's busiest thread", "judgement")
GPU_WAITS = Threshold(
    "gpu_waiting_active_pct",
    60.0,
    "%",
    "SM activity (GPU-Util without GPM) under which the GPU waits for what the server's CPU side feeds it",
    "judgement",
)


def evaluate(ev: LoadEvidence) -> list[Finding]:
    for s in ev.asked:
        p, act = s.server_process, activity_pct(s)
        if p and (p.top_thread_pct or 0) >= SERVER_THREAD.value and act is not None and act < GPU_WAITS.value:
            evidence = {
                "at": load_name(s),
                "pid": p.pid,
                "top_thread": p.top_thread,
                "top_thread_pct": p.top_thread_pct,
                "process_cpu_pct": p.cpu_pct,
                "gpu_activity_pct": act,
            }
            return [RULE.finding(evidence)]
    return []


RULE = Rule(
    FindingSpec(
        id="load.server_cpu_bound",
        step=2,
        severity=Severity.warn,
        commands=LOAD,
        needs=("local server",),
        thresholds=(SERVER_THREAD, GPU_WAITS),
        symptom="One server thread is at 100% while the GPU waits",
        cause="The server's Python side — tokenizer, detokenizer, scheduler, HTTP — cannot keep up: the GPU is fed "
        "one core's worth of work",
        decision="Use the server's multi-process front end or API-server workers, a fast tokenizer, fewer output "
        "chunks (stream intervals), or more replicas per GPU; check that the server has the cores it needs",
        condition="the server's busiest thread >= {top_thread_pct:g}% of a core while SM activity (GPU-Util) < "
        "{gpu_waiting_active_pct:g}%",
    ),
    evaluate,
)
