"""A process that holds GPU memory and computes nothing, shared by `check`'s rule (gpu.idle_held) and the
monitored runs' (run.idle_held): who it is, the GPU-hours it keeps from use, and their cost at a price.

GPU-hours kept from use: the time it held the memory idle, times the share of the GPU it kept — all of it where
nothing else computed on that GPU (a GPU held with memory and no work costs as much as a busy one, and no
scheduler gives it to another job), else the share of the GPU's memory it held (another process computed there,
in what memory was left)."""

from __future__ import annotations

from typing import Any, Mapping

import msgspec

from gputriage.diagnosis.thresholds import IDLE_HELD_BYTES, IDLE_HELD_MIN_S, IDLE_HELD_SM
from gputriage.model.exporter import HeldProcess
from gputriage.model.finding import Finding
from gputriage.model.run import GpuStatic

THRESHOLDS = (IDLE_HELD_BYTES, IDLE_HELD_SM, IDLE_HELD_MIN_S)
DECISION = (
    "Stop the process or free its memory (a notebook's kernel left open: restart or shut it down; a job "
    "that hung after its work: kill it and fix its exit), or give the GPU back to the scheduler; where it "
    "must stay, move it to a smaller GPU or a MIG slice. Kubernetes: `kubectl delete pod` in the namespace "
    "named; the pod's owner can set activeDeadlineSeconds or an idle culler"
)


def holder_label(pid: int, name: Any = None, user: Any = None, container: Mapping[str, Any] | None = None) -> str:
    """ "pid 506 (python3, user alice, pod ml/train-7f9/trainer)": what names a process to whoever must act."""
    parts = [str(name)] if name else []
    if user:
        parts.append(f"user {user}")
    where = container_label(container)
    if where:
        parts.append(where)
    return f"pid {pid}" + (f" ({', '.join(parts)})" if parts else "")


def container_label(c: Mapping[str, Any] | None) -> str:
    """The pod (namespace/pod/container), else the container (runtime and short id), else nothing."""
    if not c:
        return ""
    if c.get("pod"):
        return "pod " + "/".join(str(c[k]) for k in ("namespace", "pod", "name") if c.get(k))
    if c.get("id"):
        return f"{c.get('runtime') or 'container'} {str(c['id'])[:12]}" + (f" {c['name']}" if c.get("name") else "")
    if c.get("pod_uid"):
        return f"pod uid {c['pod_uid']}"
    return ""


def gpu_share(used_bytes: int, total_bytes: int | None, others_compute: bool) -> float:
    """The share of the GPU an idle holder keeps from use (the module's docstring says why)."""
    if not others_compute:
        return 1.0
    return round(min(1.0, used_bytes / total_bytes), 3) if total_bytes else 0.0


def held_min_s(configured: float | None) -> float:
    """How long a process must hold memory idle to be named: the user's (`[idle_held] after_minutes` in the config
    file, `--idle-after`), else the threshold's."""
    return IDLE_HELD_MIN_S.value if configured is None else configured


def held_evidence(min_s: float) -> dict[str, float]:
    """The minimum in a finding's evidence where the user set another than the threshold's."""
    return {} if min_s == IDLE_HELD_MIN_S.value else {"idle_held_min_s": min_s}


def gpu_hours(held_s: float, share: float) -> float:
    return round(held_s / 3600.0 * share, 4)


def is_idle_held(used_bytes: int | None, sm_util_pct: float | None) -> bool:
    """Holds enough memory and computes nothing (held time aside)."""
    return (
        used_bytes is not None
        and used_bytes >= IDLE_HELD_BYTES.value
        and sm_util_pct is not None
        and sm_util_pct < IDLE_HELD_SM.value
    )


def priced(
    findings: list[Finding], ids: tuple[str, ...], price_per_gpu_hour: float | None, currency: str = "USD"
) -> list[Finding]:
    """The idle-held findings with what their GPU-hours cost at a price per GPU-hour (the others as they are)."""
    if price_per_gpu_hour is None:
        return findings
    out = []
    for f in findings:
        hours = f.evidence.get("gpu_hours")
        if f.id not in ids or not isinstance(hours, (int, float)):
            out.append(f)
            continue
        cost = round(hours * price_per_gpu_hour, 2)
        out.append(
            msgspec.structs.replace(
                f,
                evidence={**f.evidence, "cost": cost, "currency": currency, "price_per_gpu_hour": price_per_gpu_hour},
                symptom=f"{f.symptom}: {cost:g} {currency} at {price_per_gpu_hour:g} {currency}/GPU-hour",
            )
        )
    return out


def judge_live(
    held: list[HeldProcess], static: Mapping[int, GpuStatic], min_s: float | None = None
) -> list[HeldProcess]:
    """The exporter's processes with `idle_held` (memory >= the threshold, no kernel for >= `min_s`, else the
    threshold's minutes) and the GPU-hours of the stretch so far, each GPU's share counted as for the findings."""
    least_s = held_min_s(min_s)
    out = []
    for p in held:
        others = any((q.sm_util_pct or 0.0) >= IDLE_HELD_SM.value for q in held if q.gpu == p.gpu and q.pid != p.pid)
        used = p.used_bytes or 0
        share = gpu_share(used, static.get(p.gpu, GpuStatic()).memory_total_bytes, others)
        is_held = used >= IDLE_HELD_BYTES.value and p.idle_s >= least_s
        out.append(msgspec.structs.replace(p, idle_held=is_held, idle_gpu_hours=gpu_hours(p.idle_s, share)))
    return out
