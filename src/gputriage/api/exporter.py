"""`exporter`: a Prometheus endpoint of the sampler's readings under dcgm-exporter's names, with each GPU's
bottleneck (named as `watch` names it) and regime, the processes on it and the findings of a periodic check. The
server is `gputriage.exporter`; this wires it to the live label, the regime tracker, the renderer and the check."""

from __future__ import annotations

import functools
import socket
import sys
from typing import Any

from gputriage.api._common import (
    GputriageError,
    configured_hang_after_s,
    configured_idle_held_min_s,
    configured_price,
)
from gputriage.api.check import check
from gputriage.api.live_hangs import LiveHangs
from gputriage.diagnosis.idle_held import judge_live
from gputriage.diagnosis.run.live import live_labels
from gputriage.diagnosis.run.live_regimes import LiveRegimes
from gputriage.exporter import DEFAULT_PORT, Exporter, ExporterError
from gputriage.model.check import CheckReport
from gputriage.report.prometheus import families
from gputriage.sampling.live import LAST_S

__all__ = ["DEFAULT_PORT", "Exporter", "exporter", "start_exporter"]


def _check(idle_held_min_s: float | None = None) -> CheckReport | None:
    """The playbook without the load window or the framework probe (None when it cannot run this time)."""
    try:
        return check(load=False, framework=False, idle_held_min_s=idle_held_min_s)
    except GputriageError:
        return None


def exporter(
    *,
    listen: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    period_s: float = 0.5,
    window_s: float = 60.0,
    check_every_s: float = 60.0,
    nvml: Any = None,
    host: Any = None,
    price_per_gpu_hour: float | None = None,
    currency: str | None = None,
    idle_held_min_s: float | None = None,
    hang_after_s: float | None = None,
) -> Exporter:
    """The exporter, not started: its live label is `watch`'s, each GPU's regime followed as `watch` follows it, its
    scrape the Prometheus renderer's, its periodic check the playbook's, the processes holding a GPU idle judged as
    `watch` judges them. `nvml`/`host`:
    backends to read (default: this machine's); `check_every_s` 0: no periodic check; `price_per_gpu_hour`: served
    for the dashboards' cost panels (default: the config file's [cost]); `idle_held_min_s`: how long a process must
    hold GPU memory idle to be served as idle_held (default: the config file's [idle_held] after_minutes, else 10
    min); `hang_after_s`: how long ranks of a distributed job on the GPUs wait in a collective for others before the
    hang is said (default: the config file's [hang] after_seconds, else 300 s)."""
    price, unit = (price_per_gpu_hour, currency) if price_per_gpu_hour is not None else configured_price()
    idle_s = configured_idle_held_min_s(idle_held_min_s)
    return Exporter(
        label=live_labels,
        render=families,
        check=functools.partial(_check, idle_s),
        listen=listen,
        port=port,
        period_s=period_s,
        window_s=window_s,
        check_every_s=check_every_s,
        nvml=nvml,
        host=host,
        held=functools.partial(judge_live, min_s=idle_s),
        regimes=functools.partial(LiveRegimes, window_s=LAST_S),
        price_per_gpu_hour=price,
        currency=currency or unit or "USD",
        hangs=functools.partial(LiveHangs, configured_hang_after_s(hang_after_s), socket.gethostname(), _say),
    )


def _say(message: str) -> None:
    sys.stderr.write(f"gputriage: {message}\n")


def start_exporter(**options: Any) -> Exporter:
    """The exporter (`exporter(**options)`, the same keyword arguments), serving at its `url` until `stop()`."""
    ex = exporter(**options)
    try:
        return ex.start()
    except ExporterError as exc:
        raise GputriageError(str(exc)) from None
