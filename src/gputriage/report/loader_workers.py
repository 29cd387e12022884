"""A run's DataLoader workers (`RunReport.loader`) as the terminal and the HTML report say them: "DataLoader: 4 workers
at 86% of a core together (22% each), on 1 usable core"."""

from __future__ import annotations

from rich.text import Text

from gputriage.model.run import LoaderWorkers, RunReport
from gputriage.report.html_page import kv


def _cores(c: float) -> str:
    return f"{c:g} usable core{'s' if c != 1 else ''}"


def summary(lw: LoaderWorkers) -> str:
    """How many workers, their CPU together and each, and the cores they share."""
    out = f"{lw.workers} worker{'s' if lw.workers != 1 else ''}"
    if lw.workers_max != lw.workers:
        out += f" ({lw.workers_max} at most)"
    if lw.cpu_pct is not None:
        out += f" at {lw.cpu_pct:.0f}% of a core together"
        out += f" ({lw.worker_cpu_pct:.0f}% each)" if lw.worker_cpu_pct is not None else ""
    return out + (f", on {_cores(lw.cores)}" if lw.cores else "")


def terminal_line(r: RunReport) -> Text | None:
    lw = r.loader
    return None if lw is None else Text(f"DataLoader: {summary(lw)} (medians)", style="dim")


def html(r: RunReport) -> str:
    lw = r.loader
    if lw is None:
        return ""
    return "<h3>DataLoader workers</h3>" + kv(
        (
            ("workers", f"{lw.workers}" + (f" ({lw.workers_max} at most)" if lw.workers_max != lw.workers else "")),
            ("their CPU (median)", f"{lw.cpu_pct:.0f}% of a core" if lw.cpu_pct is not None else None),
            ("per worker", f"{lw.worker_cpu_pct:.0f}% of a core" if lw.worker_cpu_pct is not None else None),
            ("cores the workload may use", f"{lw.cores:g}" if lw.cores else None),
            ("over", f"{lw.windows} windows with a worker running"),
        )
    )
