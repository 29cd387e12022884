"""A DataLoader's worker processes over a run, from the host's windows (`sampling.loader_workers`): how many ran, their
CPU together and per worker, the whole workload's, and the cores it may use, over the windows a worker ran in."""

from __future__ import annotations

from gputriage.model.numbers import median
from gputriage.model.run import LoaderWorkers
from gputriage.model.window import Windows


def loader_workers(host: Windows) -> LoaderWorkers | None:
    """The workers' figures (medians over the windows a worker ran in; the least cores seen); None where the workload
    ran no DataLoader worker, or its torch does not name them."""
    ws = [w for w in host if (w.loader_workers or 0) >= 1]
    if not ws:
        return None

    def med(name: str) -> float | None:
        xs = [x for x in (getattr(w, name) for w in ws) if x is not None]
        return round(float(median(xs)), 1) if xs else None

    counts = [w.loader_workers or 0.0 for w in ws]
    cores = [w.workload_cores for w in ws if w.workload_cores is not None]
    return LoaderWorkers(
        workers=round(median(counts)),
        workers_max=round(max(counts)),
        windows=len(ws),
        cpu_pct=med("loader_cpu_pct"),
        worker_cpu_pct=med("loader_worker_cpu_pct"),
        workload_cpu_pct=med("workload_cpu_pct"),
        cores=min(cores) if cores else None,
    )
