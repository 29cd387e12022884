"""`gputriage watch`: the machine, live — SM activity next to GPU-Util, VRAM, power, clocks, CPU."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Callable, Mapping, Optional

import typer
from rich.console import Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from gputriage.cli import exits
from gputriage.cli.common import FAIL_ON_HELP, HANG_AFTER, IDLE_AFTER, err, exit_for, fail, out, parse_fail_on
from gputriage.cli.run import PERIOD_HELP
from gputriage.model.clock_events import decode_reasons
from gputriage.model.live_regime import LiveRegime
from gputriage.model.owner import ProcessOwner
from gputriage.model.run import GpuStatic
from gputriage.model.sample import Sample
from gputriage.report.holders_terminal import live_processes


def _bar(pct: float | None, width: int = 10) -> str:
    if pct is None:
        return " " * width
    n = max(0, min(width, round(pct / 100 * width)))
    return "█" * n + "·" * (width - n)


def frame(
    sample: Sample,
    static: dict[str, GpuStatic],
    labels: dict[int, str],
    owners: Mapping[int, ProcessOwner] | None = None,
    regimes: Mapping[int, LiveRegime] | None = None,
) -> Group:
    """One view: each GPU, its regime where one is known (`regimes`), the processes holding them (`owners`: who each
    pid is), the host."""
    t = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("GPU", "util", "SM act", "tens", "DRAM", "VRAM", "power", "clock", "state"):
        t.add_column(col, no_wrap=True, justify="left" if col == "state" else "right")
    for g in sample.gpus:
        total = static.get(str(g.index), GpuStatic()).memory_total_bytes or 0
        vram = f"{(g.used_bytes or 0) / 2**30:.0f}/{total / 2**30:.0f}G" if total else "-"
        reasons = [r for r in decode_reasons(g.clock_event_reasons or 0) if r != "gpu_idle"]
        sm = g.sm_active_pct
        t.add_row(
            str(g.index),
            f"{g.util_pct:.0f}%" if g.util_pct is not None else "-",
            f"{_bar(sm, 6)} {sm:.0f}%" if sm is not None else "n/a",
            f"{g.tensor_active_pct:.0f}%" if g.tensor_active_pct is not None else "-",
            f"{g.dram_active_pct:.0f}%" if g.dram_active_pct is not None else "-",
            vram,
            f"{(g.power_mw or 0) / 1000:.0f}W",
            f"{g.sm_clock_mhz or '-'}MHz",
            labels.get(g.index, "") + (" " + ",".join(reasons) if reasons else ""),
        )
    host = sample.host
    cpu = Text()
    if host is not None and host.cpu_busy_pct:
        cores = host.cpu_busy_pct
        cpu.append(
            f"CPU {len(cores)} cores  max {max(cores):.0f}%  mean {sum(cores) / len(cores):.0f}%  "
            f"iowait {host.iowait_pct or 0:.0f}%\n"
        )
        cpu.append("".join("▁▁▂▃▄▅▆▇█"[min(8, int(c / 12.5))] for c in cores[:72]))
    if host is not None:
        cpu.append(
            f"\ndisk read {(host.disk_read_bytes_per_s or 0) / 1e6:.0f} MB/s  write "
            f"{(host.disk_write_bytes_per_s or 0) / 1e6:.0f} MB/s  net rx "
            f"{(host.net_rx_bytes_per_s or 0) / 1e6:.0f}"
            f" MB/s  swap-in {host.swap_in_pages_per_s or 0:.0f}/s",
            style="dim",
        )
    holders = live_processes(sample.job_processes + sample.neighbours, owners or {}, sample.t_s)
    regime_lines = [
        Text(
            f"GPU {i} regime: {r.bottleneck} since {time.strftime('%H:%M:%S', time.localtime(r.since_s))}"
            + (f" (was {r.before})" if r.before else "")
        )
        for i, r in sorted((regimes or {}).items())
    ]
    return Group(
        *([t] if sample.gpus else []),
        *regime_lines,
        *([holders] if holders is not None else []),
        cpu,
        Text("Ctrl-C to stop", style="dim"),
    )


def watch(
    store_path: Optional[Path] = typer.Option(None, "--store", metavar="FILE", help="Run store (SQLite)."),
    no_store: bool = typer.Option(False, "--no-store", help="Do not keep this watch in the store."),
    period: Optional[float] = typer.Option(None, "--period", metavar="SECONDS", min=0.02, max=10.0, help=PERIOD_HELP),
    seconds: Optional[float] = typer.Option(
        None, "--seconds", metavar="SECONDS", min=0.5, help="Stop after this many seconds."
    ),
    budget: Optional[Path] = typer.Option(
        None, "--budget", metavar="FILE", help="A TOML budget file; violations are findings."
    ),
    fail_on: str = typer.Option("never", "--fail-on", metavar="LEVEL", help=FAIL_ON_HELP),
    price: Optional[float] = typer.Option(
        None,
        "--price",
        metavar="P",
        min=0.0,
        help="Price per GPU-hour (default: the config file's [cost]): the "
        "summary counts what the idle share of the watched time cost.",
    ),
    currency: Optional[str] = typer.Option(None, "--currency", metavar="CODE"),
    idle_held_min_s: Optional[float] = IDLE_AFTER,
    hang_after_s: Optional[float] = HANG_AFTER,
    stacks_every: float = typer.Option(
        10.0,
        "--stacks-every",
        metavar="SECONDS",
        min=0.0,
        help="Dump the Python stacks of the processes on the GPUs this often with "
        "py-spy, where it is installed and permitted (0: never).",
    ),
) -> None:
    """Watch every GPU and the host live; Ctrl-C, SIGTERM or SIGHUP (or --seconds) leaves with a summary."""
    from gputriage import api  # the library and the renderer when the command runs: `gputriage --help` stays quick
    from gputriage.api._common import configured_hang_after_s
    from gputriage.api.live_hangs import LiveHangs
    from gputriage.diagnosis.run.live_regimes import LiveRegimes
    from gputriage.report.pyspy_terminal import render_pyspy
    from gputriage.report.run_terminal import render
    from gputriage.sampling.live import LAST_S
    from gputriage.sampling.pyspy import gpu_pids, started

    threshold = parse_fail_on(fail_on)
    stop = threading.Event()
    previous = {s: signal.signal(s, _stopper(stop)) for s in STOP_SIGNALS}  # a stop during start-up is kept
    try:
        m = api.Monitor(
            store=False if no_store else store_path,
            budget=budget,
            period_s=period,
            kind="watch",
            pid=None,
            isolated=False,
            price_per_gpu_hour=price,
            currency=currency,
            idle_held_min_s=idle_held_min_s,
        )
        m.__enter__()
    except api.GputriageError as exc:
        fail(str(exc), exits.BAD_INPUT)
    assert m.session is not None
    if not m.session.gpus:
        err.print(f"gputriage: no GPU to watch ({m.session.system.get('nvml', 'NVML sees no GPU')}); showing the host")
    session = m.session
    try:
        after_s = configured_hang_after_s(hang_after_s)
    except api.GputriageError as exc:
        fail(str(exc), exits.BAD_INPUT)
    hangs = LiveHangs(after_s, session.meta.hostname, lambda said: err.print(f"gputriage: {said}", soft_wrap=True))
    session.sampler.sinks = [hangs.sink, *session.sampler.sinks]  # a hang said goes with the next sample (a new list:
    # the sampler's thread runs)
    pids = lambda: gpu_pids(session.nvml, session.gpus, os.getpid())
    stacks = started(pids, stacks_every, on_dump=hangs.on_dump)  # py-spy every N s: the stacks, and the ranks' hangs
    t_end = time.monotonic() + seconds if seconds else None
    regimes = LiveRegimes(window_s=LAST_S)  # each GPU's regime, from the labels the view shows
    try:
        with Live(
            Text("sampling…"), console=out, refresh_per_second=4, transient=False, auto_refresh=out.is_terminal
        ) as live:
            while not stop.is_set() and (t_end is None or time.monotonic() < t_end):
                stop.wait(0.25)
                now = m.live()
                if now is not None:
                    holders = m.session.sampler.holders
                    regimes.update(now[0].t_s, now[1])
                    live.update(
                        frame(
                            now[0],
                            m.session.meta.gpus,
                            now[1],
                            holders.owners if holders else None,
                            regimes.current(),
                        ),
                        refresh=out.is_terminal,
                    )
    except KeyboardInterrupt:  # a second stop while the view was drawn: the summary still comes
        pass
    m.__exit__(None, None, None)
    assert m.report is not None
    found = stacks.stop()
    out.print()
    render(m.report, out)
    render_pyspy(found, out)
    for s, handler in previous.items():
        signal.signal(s, handler)
    raise typer.Exit(exit_for(m.report.findings, threshold))


# how a supervisor stops a process (systemd: SIGTERM; a closed terminal or ssh session: SIGHUP), and Ctrl-C
STOP_SIGNALS = tuple(
    s for s in (signal.SIGINT, getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None
)


def _stopper(stop: threading.Event) -> Callable[[int, Optional[FrameType]], None]:
    """The first stop signal ends the watch with its summary and keeps it as finished; a second one, while
    the summary is being made, leaves without it (exit 130)."""

    def handle(_signum: int, _frame: Optional[FrameType]) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    return handle
