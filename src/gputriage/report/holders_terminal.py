"""Who holds each GPU, as a compact terminal table: `check` (from the snapshot's gpu.N.processes facts) and
`watch` (from the sampler's processes and their owners)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from rich.table import Table

from gputriage.model.owner import ProcessOwner
from gputriage.model.sample import GpuProcess
from gputriage.report.style import clip

COLUMNS = ("GPU", "pid", "process", "user", "VRAM", "SM", "container / pod", "age")
SM_HELP = "SM = share of time the process's kernels ran (NVML per-process utilization)"


def container_text(c: Mapping[str, Any] | None) -> str:
    """namespace/pod/container, else runtime:short id, else the pod's UID, else the cgroup path."""
    if not c:
        return "-"
    if c.get("pod"):
        return "/".join(str(c[k]) for k in ("namespace", "pod", "name") if c.get(k))
    if c.get("id"):
        return f"{c.get('runtime') or 'container'}:{str(c['id'])[:12]}" + (f" {c['name']}" if c.get("name") else "")
    if c.get("pod_uid"):
        return f"pod {c['pod_uid']}"
    return str(c.get("cgroup") or "-")


def _age(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)):
        return "-"
    if seconds >= 86400:
        return f"{seconds / 86400:.1f}d"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 60:.0f}m" if seconds >= 60 else f"{seconds:.0f}s"


def _vram(n_bytes: Any) -> str:
    return f"{n_bytes / 2**30:.1f}G" if isinstance(n_bytes, int) else "n/a"


def _sm(pct: Any) -> str:
    return f"{pct:.0f}%" if isinstance(pct, (int, float)) else "n/a"


def _table(rows: Iterable[tuple[str, ...]]) -> Table | None:
    rows = list(rows)
    if not rows:
        return None
    t = Table(
        box=None,
        header_style="bold",
        pad_edge=False,
        show_edge=False,
        title="processes",
        title_justify="left",
        title_style="bold",
    )
    for col in COLUMNS:
        t.add_column(
            col,
            justify="right" if col in ("GPU", "pid", "VRAM", "SM", "age") else "left",
            no_wrap=col != "container / pod",
            overflow="fold",
        )
    for row in rows:
        t.add_row(*row)
    return t


def check_processes(processes: Mapping[int, Any]) -> Table | None:
    """{GPU: its gpu.N.processes fact value} -> the table (None: no process on any GPU)."""
    rows = []
    for i, procs in sorted(processes.items()):
        for p in procs if isinstance(procs, list) else []:
            if not isinstance(p, dict):
                continue
            name = p.get("name") or ("(another PID namespace)" if p.get("visible") is False else "-")
            rows.append(
                (
                    str(i),
                    str(p.get("pid")),
                    clip(str(name), 24),
                    clip(str(p.get("user") or "-"), 16),
                    _vram(p.get("used_bytes")),
                    _sm(p.get("sm_util_pct")),
                    clip(container_text(p.get("container")), 60),
                    _age(p.get("age_s")),
                )
            )
    return _table(rows)


def live_processes(
    processes: Iterable[GpuProcess], owners: Mapping[int, ProcessOwner], now_s: float | None = None
) -> Table | None:
    """The sampler's processes on the GPUs, named by their owners (looked up once per pid); ages at `now_s`."""
    rows = []
    for p in sorted(processes, key=lambda x: (x.gpu, x.pid)):
        o = owners.get(p.pid)
        name = (o.name if o else None) or ("(another PID namespace)" if o is not None and not o.visible else "-")
        container = container_text(_container_dict(o)) if o is not None else "-"
        rows.append(
            (
                str(p.gpu),
                str(p.pid),
                clip(name, 24),
                clip((o.user if o else None) or "-", 16),
                _vram(p.used_bytes),
                _sm(p.sm_util_pct),
                clip(container, 60),
                _age(_age_at(o, now_s)),
            )
        )
    return _table(rows)


def _age_at(o: ProcessOwner | None, now_s: float | None) -> float | None:
    if o is None:
        return None
    if o.started_s is not None and now_s is not None:
        return max(0.0, now_s - o.started_s)
    return o.age_s


def _container_dict(o: ProcessOwner) -> dict[str, Any]:
    c = o.container
    return {} if c is None else {f: getattr(c, f) for f in c.__struct_fields__}
