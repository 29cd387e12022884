"""A process held GPU memory and ran no kernel for minutes of a monitored run (`watch`, `run`, `monitor()`),
named (user, container, pod), with the GPU-hours it kept from use and, at a price, their cost.

It rests on NVML's per-process utilization read every few seconds through the run: the longest stretch in which
the process held >= the memory threshold and each reading was under 1% (`sampling.idle_streaks`)."""

from __future__ import annotations

from typing import Any

import msgspec

from gputriage.diagnosis.idle_held import (
    DECISION,
    THRESHOLDS,
    gpu_hours,
    gpu_share,
    held_evidence,
    held_min_s,
    holder_label,
)
from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RUN, RunEvidence
from gputriage.diagnosis.thresholds import IDLE_HELD_BYTES, IDLE_HELD_GIB
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording
from gputriage.model.numbers import GIB
from gputriage.model.owner import ProcessOwner
from gputriage.model.run import GpuStatic, ProcessSummary

HOLDER = "{who} held {used_gib:.1f} GiB with no kernel for {idle_min:.0f} min"


def evaluate(ev: RunEvidence) -> list[Finding]:
    """One finding per GPU on which a process held memory idle long enough (the user's minutes, else the
    threshold's), naming each such process, the GPU-hours it kept from use and, at a price, their cost."""
    least_s = held_min_s(ev.rec.meta.idle_held_min_s)
    out: list[Finding] = []
    for gpu in sorted({p.gpu for p in ev.processes}):
        on_gpu = [p for p in ev.processes if p.gpu == gpu]
        held = [
            p
            for p in on_gpu
            if (p.idle_longest_s or 0.0) >= least_s and (p.idle_used_min_bytes or 0) >= IDLE_HELD_BYTES.value
        ]
        if held:
            holders = [_holder(p, on_gpu, ev.static(gpu), ev.rec.owners.get(p.pid)) for p in held]
            out.append(_finding(gpu, holders, least_s, ev.rec.meta.price_per_gpu_hour, ev.rec.meta.currency))
    return out


def _holder(p: ProcessSummary, on_gpu: list[ProcessSummary], gpu: GpuStatic, o: ProcessOwner | None) -> dict[str, Any]:
    """One process that held the GPU idle: who, how much, how long, and the share of the GPU it kept from use."""
    idle_s, used = p.idle_longest_s or 0.0, p.idle_used_min_bytes or 0
    others = any((q.computing_share or 0.0) > 0 for q in on_gpu if q.pid != p.pid)
    share = gpu_share(used, gpu.memory_total_bytes, others)
    return {
        "pid": p.pid,
        "name": o.name if o is not None else None,
        "user": o.user if o is not None else None,
        "container": msgspec.to_builtins(o.container) if o is not None and o.container is not None else None,
        "used_min_bytes": used,
        "idle_s": idle_s,
        "idle_until_s": p.idle_until_s,
        "gpu_share": share,
        "gpu_hours": gpu_hours(idle_s, share),
        "job": p.job,
    }


def _finding(gpu: int, holders: list[dict[str, Any]], least_s: float, price: float | None, currency: str) -> Finding:
    hours = round(sum(h["gpu_hours"] for h in holders), 4)
    named = "; ".join(
        HOLDER.format(
            who=holder_label(h["pid"], h["name"], h["user"], h["container"]),
            used_gib=h["used_min_bytes"] / GIB,
            idle_min=h["idle_s"] / 60,
        )
        for h in holders
    )
    evidence: dict[str, Any] = {"holders": holders, "gpu_hours": hours, **held_evidence(least_s)}
    fill: dict[str, Any] = {"gpu": gpu, "holders": named, "gpu_hours": hours}
    if price is not None:
        cost = round(hours * price, 2)
        evidence |= {"cost": cost, "currency": currency, "price_per_gpu_hour": price}
        fill |= {"cost": cost, "currency": currency, "price_per_gpu_hour": price}
    return RULE.finding(evidence, subject=f"gpu.{gpu}", say="held" if price is None else "priced", fill=fill)


HELD = "GPU {gpu}: {holders} — {gpu_hours:.2f} GPU-hours held idle"
RULE = Rule(
    FindingSpec(
        id="run.idle_held",
        step=3,
        severity=Severity.warn,
        commands=RUN,
        needs=("gpu",),
        symptom="A process held GPU memory and computed nothing for minutes",
        cause="A process kept its memory on the GPU through the stretch named and ran no kernel in it: a notebook "
        "left open, a job hung after its work or waiting on something else, a server with no traffic. The GPU is "
        "paid for all the same, and where nothing else computed there, no other job could use it",
        decision=DECISION,
        condition="a process held >= {idle_held_min_gib:g} GiB and every NVML per-process utilization "
        "reading of it was "
        "< {idle_held_max_sm_util_pct:g}% for >= {idle_held_min_s:g} s in a row (or the minutes set: `--idle-after`, "
        "`[idle_held] after_minutes`); GPU-hours = that stretch x the GPU's share it held (all of it where nothing "
        "else computed there in the run, else its share of the memory)",
        thresholds=(IDLE_HELD_GIB, *THRESHOLDS),  # the GiB declared, the bytes read (derived from it)
        says={
            "held": Wording(symptom=HELD),
            "priced": Wording(symptom=HELD + ": {cost:g} {currency} at {price_per_gpu_hour:g} {currency}/GPU-hour"),
        },
    ),
    evaluate,
)
