"""Who holds each GPU, as Prometheus series: one per process, labelled as dcgm-exporter labels pods (`pod`,
`namespace`, `container`) plus `pid`, `process` and `user` — its memory, its share of the GPU's time, how long it
has held memory with no kernel, whether that counts as holding the GPU idle and the GPU-hours it kept from use;
and the price of a GPU-hour where one is set, for the dashboards' cost panels."""

from __future__ import annotations

from typing import Callable, Iterator, Optional

from gputriage.exporter.exposition import Family
from gputriage.model.exporter import ExporterState, HeldProcess

LABELS = ["gpu", "pid", "process", "user", "pod", "namespace", "container", "Hostname"]

# (name, help, value of a process; None: left out)
FAMILIES: tuple[tuple[str, str, Callable[[HeldProcess], Optional[float]]], ...] = (
    (
        "gputriage_gpu_process_memory_bytes",
        "GPU memory held by each process with a compute context (bytes).",
        lambda p: float(p.used_bytes) if p.used_bytes is not None else None,
    ),
    (
        "gputriage_gpu_process_sm_util_ratio",
        "Share of time each process's kernels ran on the GPU since the previous "
        "reading (NVML per-process utilization, 0-1).",
        lambda p: p.sm_util_pct / 100 if p.sm_util_pct is not None else None,
    ),
    (
        "gputriage_gpu_process_idle_seconds",
        "How long each process has held GPU memory and run no kernel (0 while it computes).",
        lambda p: p.idle_s,
    ),
    (
        "gputriage_gpu_process_idle_held",
        "1 for a process holding GPU memory idle long enough to count as holding the "
        "GPU idle (`gputriage rules run.idle_held`), else 0.",
        lambda p: 1.0 if p.idle_held else 0.0,
    ),
    (
        "gputriage_gpu_process_idle_held_gpu_hours",
        "GPU-hours each process's current idle stretch kept from use (the "
        "whole GPU where nothing else computes there, else its share of the memory).",
        lambda p: p.idle_gpu_hours,
    ),
)


def _labels(p: HeldProcess, hostname: str) -> list[str]:
    o = p.owner
    c = o.container if o is not None else None
    return [
        str(p.gpu),
        str(p.pid),
        (o.name if o else None) or "",
        (o.user if o else None) or "",
        (c.pod if c else None) or "",
        (c.namespace if c else None) or "",
        (c.name if c else None) or "",
        hostname,
    ]


def holder_families(state: ExporterState) -> Iterator[Family]:
    """The per-process families (from the processes the sampler's listing gives where no holder was read yet)."""
    held = state.holders or [
        HeldProcess(gpu=p.gpu, pid=p.pid, used_bytes=p.used_bytes, sm_util_pct=p.sm_util_pct) for p in state.processes
    ]
    for name, help_text, pick in FAMILIES:
        fam = Family(name=name, help=help_text, labels=LABELS)
        for p in held:
            value = pick(p)
            if value is not None:
                fam.add(_labels(p, state.hostname), float(value))
        yield fam
    price = Family(
        name="gputriage_price_per_gpu_hour",
        help="What a GPU-hour costs (--price, or the config file's [cost]); absent where no price is set.",
        labels=["currency", "Hostname"],
    )
    if state.price_per_gpu_hour is not None:
        price.add([state.currency, state.hostname], state.price_per_gpu_hour)
    yield price
