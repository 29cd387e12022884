"""CPU: per-core utilization over a short window, load average, PSI, cgroup limit (playbook task 6).

gputriage's own helper processes (the link load, the framework probe) may run during the window:
their threads' CPU time is subtracted from the core each ran on, so they never look like the
user's load.
"""

from __future__ import annotations

from typing import Any

from gputriage.backends.procfs import cpu_busy_pct, parse_proc_stat, parse_psi
from gputriage.collect.base import Context, fact
from gputriage.model.fact import Fact
from gputriage.model.numbers import median
from gputriage.model.reading import Unavailable

USER_FIELD, SYSTEM_FIELD = 0, 2  # positions in a /proc/stat cpu row


def thread_jiffies(ctx: Context) -> dict[int, tuple[int, int]]:
    """{tid: (utime+stime jiffies, last cpu)} for every thread of the ignored processes."""
    out: dict[int, tuple[int, int]] = {}
    for pid in ctx.ignore_pids:
        tids = ctx.host.list_dir(f"/proc/{pid}/task")
        if isinstance(tids, Unavailable):
            continue
        for tid in tids:
            text = ctx.host.read_text(f"/proc/{pid}/task/{tid}/stat")
            if isinstance(text, Unavailable):
                continue
            fields = text.rsplit(")", 1)[-1].split()
            # after the comm: state is field 3 → index 0; utime 14 → 11, stime 15 → 12, processor 39 → 36
            try:
                out[int(tid)] = (int(fields[11]) + int(fields[12]), int(fields[36]))
            except (IndexError, ValueError):
                continue
    for key in [k for k in ctx.host.records if k.startswith("/proc/") and "/task/" in k]:
        del ctx.host.records[key]  # our own threads are not part of the recording
    return out


def begin(ctx: Context) -> Any:
    text = ctx.host.read_text("/proc/stat")
    return text if isinstance(text, Unavailable) else (parse_proc_stat(text), thread_jiffies(ctx))


def _subtract_ignored(
    ctx: Context, stats: dict[str, list[int]], before: dict[int, tuple[int, int]], after: dict[int, tuple[int, int]]
) -> None:
    for tid, (j1, cpu_id) in after.items():
        spent = j1 - (before[tid][0] if tid in before else 0)
        row = stats.get(f"cpu{cpu_id}")
        if spent > 0 and row is not None:
            take = min(spent, row[USER_FIELD])
            row[USER_FIELD] -= take
            row[3] += take  # the time counts as idle instead
            if "cpu" in stats:
                stats["cpu"][USER_FIELD] -= take
                stats["cpu"][3] += take


def end(ctx: Context, first: Any, window_s: float) -> list[Fact]:
    src = "proc:/proc/stat"
    second = begin(ctx)
    if isinstance(first, Unavailable) or isinstance(second, Unavailable):
        why = first if isinstance(first, Unavailable) else second
        return [fact("host.cpu.per_core_busy_pct", why, src), fact("host.cpu.iowait_pct", why, src)]
    (a, threads_a), (b, threads_b) = first, second
    _subtract_ignored(ctx, b, threads_a, threads_b)
    cores = sorted((k for k in a if k != "cpu" and k in b), key=lambda k: int(k[3:]))
    per_core = [round(cpu_busy_pct(a[k], b[k])[0], 1) for k in cores]
    _, iowait = cpu_busy_pct(a["cpu"], b["cpu"]) if "cpu" in a and "cpu" in b else (0.0, 0.0)
    facts = [
        fact("host.cpu.count", len(cores), src),
        fact("host.cpu.per_core_busy_pct", per_core, src),
        fact("host.cpu.iowait_pct", round(iowait, 1), src),
        fact("host.cpu.window_ms", round(window_s * 1000), src),
    ]
    if per_core:
        facts += [
            fact("host.cpu.max_core_busy_pct", max(per_core), src),
            fact("host.cpu.median_core_busy_pct", round(median(per_core), 1), src),
        ]
    return facts


def collect(ctx: Context) -> list[Fact]:
    facts: list[Fact] = []
    load = ctx.host.read_text("/proc/loadavg")
    facts.append(
        fact(
            "host.cpu.loadavg_1m",
            load if isinstance(load, Unavailable) else float(load.split()[0]),
            "proc:/proc/loadavg",
        )
    )
    psi = ctx.host.read_text("/proc/pressure/cpu")
    facts.append(
        fact(
            "host.psi.cpu.some_avg10_pct",
            psi if isinstance(psi, Unavailable) else parse_psi(psi).get("some_avg10", 0.0),
            "proc:/proc/pressure/cpu",
        )
    )
    facts.append(cgroup_cpu_limit(ctx))
    return facts


def cgroup_cpu_limit(ctx: Context) -> Fact:
    """CPU cores the cgroup allows: cgroup v2 cpu.max, else v1 cfs quota; None when unlimited."""
    v2 = ctx.host.read_text("/sys/fs/cgroup/cpu.max")
    if isinstance(v2, str):
        quota, _, period = v2.strip().partition(" ")
        value = None if quota == "max" else round(int(quota) / int(period or 100000), 2)
        return fact("host.cgroup.cpu_limit_cores", value, "cgroup:/sys/fs/cgroup/cpu.max")
    v1_quota = ctx.host.read_text("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
    v1_period = ctx.host.read_text("/sys/fs/cgroup/cpu/cpu.cfs_period_us")
    if isinstance(v1_quota, str) and isinstance(v1_period, str):
        q = int(v1_quota.strip())
        value = None if q < 0 else round(q / int(v1_period.strip()), 2)
        return fact("host.cgroup.cpu_limit_cores", value, "cgroup:cpu.cfs_quota_us")
    return fact("host.cgroup.cpu_limit_cores", None, "cgroup:none")
