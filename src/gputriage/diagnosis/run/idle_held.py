"""A process held GPU memory and ran no kernel for minutes of a monitored run (`watch`, `run`, `monitor()`):
run.idle_held, naming it (user, container, pod) with the GPU-hours it kept from use and, at a price, their cost.

It rests on NVML's per-process utilization read every few seconds through the run: the longest stretch in which
the process held >= the memory threshold and each reading was under 1% (`sampling.idle_streaks`)."""

from __future__ import annotations

from typing import Any, Mapping

import msgspec

from gputriage.diagnosis.idle_held import (
    DECISION,
    THRESHOLDS,
    gpu_hours,
    gpu_share,
    held_evidence,
    held_min_s,
    holder_label,
    priced,
)
from gputriage.diagnosis.thresholds import IDLE_HELD_BYTES, IDLE_HELD_MIN_S, IDLE_HELD_SM
from gputriage.model.finding import Finding, FindingSpec, Severity
from gputriage.model.owner import ProcessOwner
from gputriage.model.run import GpuStatic, ProcessSummary

IDLE_HELD = FindingSpec(
    id="run.idle_held",
    step=3,
    severity=Severity.warn,
    commands=("run", "watch", "monitor"),
    needs=("gpu",),
    symptom="A process held GPU memory and computed nothing for minutes",
    cause="A process kept its memory on the GPU through the stretch named and ran no kernel in it: a notebook left "
    "open, a job hung after its work or waiting on something else, a server with no traffic. The GPU is paid "
    "for all the same, and where nothing else computed there, no other job could use it",
    decision=DECISION,
    condition=f"a process held >= {IDLE_HELD_BYTES.value / 2**30:g} GiB and every NVML per-process utilization "
    f"reading of it was < {IDLE_HELD_SM.value:g}% for >= {IDLE_HELD_MIN_S.value / 60:g} min in a row (or the minutes "
    "set: `--idle-after`, `[idle_held] after_minutes`); "
    "GPU-hours = that stretch x the GPU's share it held (all of it where nothing else computed there in "
    "the run, else its share of the memory)",
    thresholds=THRESHOLDS,
)
SPECS = (IDLE_HELD,)


def idle_held_findings(
    processes: list[ProcessSummary],
    static: Mapping[int, GpuStatic],
    owners: Mapping[int, ProcessOwner] | None = None,
    price_per_gpu_hour: float | None = None,
    currency: str = "USD",
    min_s: float | None = None,
) -> list[Finding]:
    """One finding per GPU on which a process held memory idle long enough (`min_s`, else the threshold's),
    naming each such process."""
    owners = owners or {}
    least_s = held_min_s(min_s)
    out: list[Finding] = []
    for gpu in sorted({p.gpu for p in processes}):
        on_gpu = [p for p in processes if p.gpu == gpu]
        held = [
            p
            for p in on_gpu
            if (p.idle_longest_s or 0.0) >= least_s and (p.idle_used_min_bytes or 0) >= IDLE_HELD_BYTES.value
        ]
        if not held:
            continue
        total = static.get(gpu, GpuStatic()).memory_total_bytes
        holders: list[dict[str, Any]] = []
        said: list[str] = []
        hours = 0.0
        for p in held:
            idle_s, used = p.idle_longest_s or 0.0, p.idle_used_min_bytes or 0
            others = any((q.computing_share or 0.0) > 0 for q in on_gpu if q.pid != p.pid)
            share = gpu_share(used, total, others)
            o = owners.get(p.pid)
            c = msgspec.to_builtins(o.container) if o is not None and o.container is not None else None
            name, user = (o.name, o.user) if o is not None else (None, None)
            holders.append(
                {
                    "pid": p.pid,
                    "name": name,
                    "user": user,
                    "container": c,
                    "used_min_bytes": used,
                    "idle_s": idle_s,
                    "idle_until_s": p.idle_until_s,
                    "gpu_share": share,
                    "gpu_hours": gpu_hours(idle_s, share),
                    "job": p.job,
                }
            )
            hours += gpu_hours(idle_s, share)
            said.append(
                f"{holder_label(p.pid, name, user, c)} held {used / 2**30:.1f} GiB with no kernel for "
                f"{idle_s / 60:.0f} min"
            )
        hours = round(hours, 4)
        named = "; ".join(said)
        out.append(
            IDLE_HELD.finding(
                {"holders": holders, "gpu_hours": hours, **held_evidence(least_s)},
                subject=f"gpu.{gpu}",
                symptom=f"GPU {gpu}: {named} — {hours:.2f} GPU-hours held idle",
            )
        )
    return priced(out, (IDLE_HELD.id,), price_per_gpu_hour, currency)
