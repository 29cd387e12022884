"""Processes hold the GPU, yet it does nothing (triage step 1)."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.thresholds import IDLE_UTIL
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for i in ev.gpus:
        procs = ev.gpu(i, "processes") or []
        util = ev.gpu(i, "util.gpu_pct")
        if procs and util is not None and util <= IDLE_UTIL.value:
            out.append(
                RULE.finding(
                    {f"gpu.{i}.util.gpu_pct": util, "processes": len(procs), "pids": [p["pid"] for p in procs][:8]},
                    severity=Severity.info,
                    subject=f"gpu.{i}",
                )
            )
    return out


RULE = Rule(
    FindingSpec(
        id="util.gpu_idle_with_processes",
        step=1,
        severity=Severity.info,
        symptom="Processes hold memory on the GPU but it is idle",
        cause="The job is on the CPU, starved by its data pipeline, blocked, or crashed and restarting while it keeps "
        "its CUDA context (one instant reading: confirm over time with `gputriage watch`)",
        decision="Check device placement and the data loader first; `gputriage run -- <cmd>` names the bottleneck",
        commands=CHECK,
        condition="at least one process on the GPU and GPU-Util <= {idle_util_pct:g}%",
        thresholds=(IDLE_UTIL,),
        needs=("gpu",),
    ),
    evaluate,
)
