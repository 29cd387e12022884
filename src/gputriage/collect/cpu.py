"""CPU: per-core utilization over a short window, load average, PSI, cgroup limit (seed task 6)."""

from __future__ import annotations

import statistics
from typing import Any

from gputriage.collect.base import Context, fact
from gputriage.collect.procfs import cpu_busy_pct, parse_proc_stat, parse_psi
from gputriage.model.fact import Fact
from gputriage.model.reading import Unavailable


def begin(ctx: Context) -> Any:
    text = ctx.host.read_text("/proc/stat")
    return text if isinstance(text, Unavailable) else parse_proc_stat(text)


def end(ctx: Context, first: Any, window_s: float) -> list[Fact]:
    src = "proc:/proc/stat"
    second = begin(ctx)
    if isinstance(first, Unavailable) or isinstance(second, Unavailable):
        why = first if isinstance(first, Unavailable) else second
        return [fact("host.cpu.per_core_busy_pct", why, src), fact("host.cpu.iowait_pct", why, src)]
    cores = sorted((k for k in first if k != "cpu" and k in second), key=lambda k: int(k[3:]))
    per_core = [round(cpu_busy_pct(first[k], second[k])[0], 1) for k in cores]
    _, iowait = cpu_busy_pct(first["cpu"], second["cpu"]) if "cpu" in first and "cpu" in second else (0.0, 0.0)
    facts = [
        fact("host.cpu.count", len(cores), src),
        fact("host.cpu.per_core_busy_pct", per_core, src),
        fact("host.cpu.iowait_pct", round(iowait, 1), src),
        fact("host.cpu.window_ms", round(window_s * 1000), src),
    ]
    if per_core:
        facts += [fact("host.cpu.max_core_busy_pct", max(per_core), src),
                  fact("host.cpu.median_core_busy_pct", round(statistics.median(per_core), 1), src)]
    return facts


def collect(ctx: Context) -> list[Fact]:
    facts: list[Fact] = []
    load = ctx.host.read_text("/proc/loadavg")
    facts.append(fact("host.cpu.loadavg_1m", load if isinstance(load, Unavailable) else float(load.split()[0]),
                      "proc:/proc/loadavg"))
    psi = ctx.host.read_text("/proc/pressure/cpu")
    facts.append(fact("host.psi.cpu.some_avg10_pct",
                      psi if isinstance(psi, Unavailable) else parse_psi(psi).get("some_avg10", 0.0),
                      "proc:/proc/pressure/cpu"))
    facts.append(cgroup_cpu_limit(ctx))
    return facts


def cgroup_cpu_limit(ctx: Context) -> Fact:
    """CPU cores the cgroup allows: cgroup v2 cpu.max, else v1 cfs quota; None when unlimited."""
    v2 = ctx.host.read_text("/sys/fs/cgroup/cpu.max")
    if isinstance(v2, str):
        quota, _, period = v2.strip().partition(" ")
        value = None if quota == "max" else round(int(quota) / int(period or 100000), 2)
        return fact("host.cgroup.cpu_limit_cores", value, "cgroup:/sys/fs/cgroup/cpu.max")
    quota = ctx.host.read_text("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
    period = ctx.host.read_text("/sys/fs/cgroup/cpu/cpu.cfs_period_us")
    if isinstance(quota, str) and isinstance(period, str):
        q = int(quota.strip())
        value = None if q < 0 else round(q / int(period.strip()), 2)
        return fact("host.cgroup.cpu_limit_cores", value, "cgroup:cpu.cfs_quota_us")
    return fact("host.cgroup.cpu_limit_cores", None, "cgroup:none")
