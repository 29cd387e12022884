"""`gputriage exporter`: a Prometheus endpoint with dcgm-exporter's names, and gputriage's verdicts."""

from __future__ import annotations

import signal
import threading
from typing import Optional

import typer

from gputriage.cli import exits
from gputriage.cli.common import HANG_AFTER, IDLE_AFTER, err, fail


def exporter(
    listen: str = typer.Option(
        "127.0.0.1",
        "--listen",
        metavar="ADDR",
        help="Address to bind. 127.0.0.1 by default: only this machine can scrape. Give "
        "0.0.0.0 (or an interface's address) to let a Prometheus elsewhere in; "
        "dcgm-exporter binds every interface.",
    ),
    port: int = typer.Option(9400, "--port", metavar="PORT", help="dcgm-exporter's port by default."),
    period: float = typer.Option(0.5, "--period", metavar="S", help="Seconds between two GPU readings."),
    window: float = typer.Option(60.0, "--window", metavar="S", help="Seconds over which bottleneck shares count."),
    check_every: float = typer.Option(
        60.0, "--check-every", metavar="S", help="Run the check this often (its findings, Xid, PCIe replays); 0: never."
    ),
    price: Optional[float] = typer.Option(
        None,
        "--price",
        metavar="P",
        min=0.0,
        help="Price per GPU-hour, served as gputriage_price_per_gpu_hour for the "
        "dashboard's cost panels (default: price_per_gpu_hour under [cost] in "
        "the config file; none is assumed).",
    ),
    currency: Optional[str] = typer.Option(
        None, "--currency", help="Currency of --price (default: the config file's, else USD)."
    ),
    idle_held_min_s: Optional[float] = IDLE_AFTER,
    hang_after_s: Optional[float] = HANG_AFTER,
) -> None:
    """Serve each GPU's readings at /metrics under dcgm-exporter's names and units (DCGM_FI_DEV_GPU_UTIL,
    DCGM_FI_PROF_SM_ACTIVE, DCGM_FI_DEV_FB_USED, DCGM_FI_DEV_POWER_USAGE, ...), so existing dashboards work,
    plus gputriage_bottleneck{gpu,bottleneck}, gputriage_bottleneck_share, gputriage_finding{id,severity}; each
    GPU's regime, as `run` cuts a run into regimes (`gputriage rules run.regime_changed`): gputriage_regime{gpu,
    bottleneck}, gputriage_regime_since_timestamp_seconds and gputriage_regime_changes_total; and per process on the
    GPUs, labelled pod, namespace, container, pid, process and user as dcgm-exporter labels pods:
    gputriage_gpu_process_memory_bytes, _sm_util_ratio, _idle_seconds, _idle_held and _idle_held_gpu_hours. A scrape
    never waits on NVML: it reads what the sampler last read. GET /stacks dumps the Python stacks of the processes
    on the GPUs with py-spy (JSON; only when asked: a dump pauses a process for milliseconds), where py-spy is
    installed and permitted (gputriage_pyspy_available; /stacks says why not). GET /regimes: each GPU's regime
    and its last changes (JSON). A distributed job's ranks on the GPUs are dumped with py-spy every 10 s for a hang:
    ranks waiting in a collective past --hang-after for ranks that did not arrive are said once on stderr, counted in
    gputriage_rank_hangs_total (the missing ranks in gputriage_rank_hang_missing) and listed at GET /hangs."""
    if period <= 0 or window <= 0 or check_every < 0:
        fail("--period and --window must be positive, --check-every 0 or more", exits.USAGE)
    done = threading.Event()
    # from the start: a stop asked during start-up is not lost; the handlers before are back when it returns
    previous = {s: signal.signal(s, lambda *_: done.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        _serve(done, listen, port, period, window, check_every, price, currency, idle_held_min_s, hang_after_s)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    raise typer.Exit(exits.OK)


def _serve(
    done: threading.Event,
    listen: str,
    port: int,
    period: float,
    window: float,
    check_every: float,
    price: float | None,
    currency: str | None,
    idle_held_min_s: float | None,
    hang_after_s: float | None,
) -> None:
    """Serve until `done` is set (a signal), then stop the exporter."""
    from gputriage.api import GputriageError  # the library at the command's start: `gputriage --help` stays quick
    from gputriage.api.exporter import start_exporter

    try:
        ex = start_exporter(
            listen=listen,
            port=port,
            period_s=period,
            window_s=window,
            check_every_s=check_every,
            price_per_gpu_hour=price,
            currency=currency,
            idle_held_min_s=idle_held_min_s,
            hang_after_s=hang_after_s,
        )
    except GputriageError as exc:
        fail(str(exc), exits.BAD_INPUT)
    gpus = (
        f"{len(ex.gpus)} GPU{'s' if len(ex.gpus) != 1 else ''}"
        if ex.gpus
        else f"no GPU: {ex.system.get('nvml', 'NVML sees none')}"
    )
    err.print(f"serving {ex.url} ({gpus}); Ctrl-C to stop", highlight=False, soft_wrap=True)
    stacks = f"at {ex.stacks_url}" if ex.pyspy is None else f"none: {ex.pyspy.detail}"
    err.print(f"python stacks (py-spy) {stacks}", highlight=False, soft_wrap=True)
    while not done.wait(1.0):  # a timed wait: the signal's handler runs at once on every platform
        pass
    stopping = threading.Thread(target=ex.stop, daemon=True)
    stopping.start()
    stopping.join(timeout=10)  # a sampler stuck in a driver call does not hold the exit
