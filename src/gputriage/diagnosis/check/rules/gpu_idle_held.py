"""A process holds GPU memory and computes nothing (triage step 3): named with its user and container, and the
GPU-hours it has kept from use.

One snapshot cannot watch minutes go by. What it rests on: NVML's per-process utilization over the last seconds
the driver keeps (no kernel of the process in them), and the process's age (it has held its context since it
started, at most that long). So it says "up to" that many GPU-hours, and how to confirm over minutes."""

from __future__ import annotations

from typing import Any

from gputriage.diagnosis.check.base import CHECK, Evidence, gib
from gputriage.diagnosis.idle_held import (
    DECISION,
    container_label,
    gpu_hours,
    gpu_share,
    held_evidence,
    held_min_s,
    holder_label,
    is_idle_held,
)
from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.thresholds import IDLE_HELD_AFTER_MIN, IDLE_HELD_GIB, IDLE_HELD_SM
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording

ID = "gpu.idle_held"


def evaluate(ev: Evidence) -> list[Finding]:
    least_s = held_min_s(ev.settings.get("idle_held_min_s"))  # how old an idle holder must be to be named
    out = []
    for i in ev.gpus:
        procs = [p for p in ev.gpu(i, "processes") or [] if isinstance(p, dict)]
        computing = [p for p in procs if (p.get("sm_util_pct") or 0.0) >= IDLE_HELD_SM.value]
        total = ev.gpu(i, "memory.total_bytes")
        held = [
            p
            for p in procs
            if is_idle_held(p.get("used_bytes"), p.get("sm_util_pct")) and (p.get("age_s") or 0.0) >= least_s
        ]
        if not held:
            continue
        holders = [_holder(p, total, bool(computing)) for p in held]
        hours = round(sum(h["gpu_hours"] for h in holders), 4)
        window = max(p.get("sm_util_window_s") or 0.0 for p in held)
        named = "; ".join(
            f"{holder_label(p['pid'], p.get('name'), p.get('user'), p.get('container'))} holds "
            f"{gib(p['used_bytes'])}, started {_duration(p['age_s'])} ago"
            for p in held
        )
        out.append(
            RULE.finding(
                {
                    "holders": holders,
                    "gpu_hours": hours,
                    "sm_util_window_s": window,
                    "others_computing": [p["pid"] for p in computing],
                    **held_evidence(least_s),
                },
                severity=Severity.info,
                subject=f"gpu.{i}",
                say="one" if len(held) == 1 else "several",
                fill={"gpu": i, "holders": named, "window_s": window, "gpu_hours": hours},
            )
        )
    return out


def _holder(p: dict[str, Any], total: Any, others_compute: bool) -> dict[str, Any]:
    share = gpu_share(p["used_bytes"], total if isinstance(total, int) else None, others_compute)
    return {
        "pid": p["pid"],
        "name": p.get("name"),
        "user": p.get("user"),
        "container": container_label(p.get("container")) or None,
        "used_bytes": p["used_bytes"],
        "sm_util_pct": p.get("sm_util_pct"),
        "age_s": p["age_s"],
        "gpu_share": share,
        "gpu_hours": gpu_hours(p["age_s"], share),
    }


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.0f} min"


RULE = Rule(
    FindingSpec(
        id=ID,
        step=3,
        severity=Severity.info,
        symptom="A process holds GPU memory and computes nothing",
        cause="A process keeps its memory on the GPU but runs no kernel: a notebook left open, a job hung after its "
        "work or waiting on something else, a server with no traffic. The GPU is paid for (and, where nothing else "
        "computes there, kept from every other job) all the same. One snapshot sees only the last seconds NVML keeps: "
        "the process may compute again; `gputriage watch` confirms over minutes (run.idle_held)",
        decision=DECISION,
        commands=CHECK,
        condition="a process holds >= {idle_held_min_gib:g} GiB, ran no kernel (< {idle_held_max_sm_util_pct:g}% "
        "NVML per-process utilization) over the seconds the driver keeps, and started >= {idle_held_after_min:g} min "
        "ago (or the minutes set: `--idle-after`, `[idle_held] after_minutes`); GPU-hours = its age x the GPU's "
        "share it holds (all of it where nothing else computes there, else its share of the memory)",
        thresholds=(IDLE_HELD_GIB, IDLE_HELD_SM, IDLE_HELD_AFTER_MIN),  # as the prose says them: GiB, minutes
        needs=("gpu",),
        says={
            "one": Wording(
                symptom="GPU {gpu}: {holders}; it ran no kernel in the last {window_s:g} s — up to {gpu_hours:.2f} "
                "GPU-hours held idle since it started"
            ),
            "several": Wording(
                symptom="GPU {gpu}: {holders}; none of them ran a kernel in the last {window_s:g} s — up to "
                "{gpu_hours:.2f} GPU-hours held idle since they started"
            ),
        },
    ),
    evaluate,
)
