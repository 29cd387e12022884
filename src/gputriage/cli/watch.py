"""`gputriage watch`: the machine, live — SM activity next to GPU-Util, VRAM, power, clocks, CPU."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from gputriage.cli.common import budget_or_fail, err, out, store_or_fail


def _bar(pct: float | None, width: int = 10) -> str:
    if pct is None:
        return " " * width
    n = max(0, min(width, round(pct / 100 * width)))
    return "█" * n + "·" * (width - n)


def frame(sample: dict[str, Any], info: dict[int, dict[str, Any]], regimes: dict[int, str]) -> Group:
    from gputriage.collect.power_thermal import decode_reasons

    t = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("GPU", "util", "SM act", "tens", "DRAM", "VRAM", "power", "clock", "state"):
        t.add_column(col, no_wrap=True, justify="right" if col not in ("state",) else "left")
    for g in sample.get("gpus", []):
        i = g["index"]
        gpm = g.get("gpm", {})
        total = info.get(i, {}).get("memory_total_bytes") or 0
        vram = f"{(g.get('used') or 0) / 2**30:.0f}/{total / 2**30:.0f}G" if total else "-"
        reasons = [r for r in decode_reasons(g.get("reasons", 0)) if r != "gpu_idle"]
        sm = gpm.get("2")
        t.add_row(str(i), f"{g.get('util', '-')}%", f"{_bar(sm, 6)} {sm:.0f}%" if sm is not None else "n/a",
                  f"{gpm['5']:.0f}%" if "5" in gpm else "-", f"{gpm['10']:.0f}%" if "10" in gpm else "-", vram,
                  f"{(g.get('power') or 0) / 1000:.0f}W", f"{g.get('sm_clk', '-')}MHz",
                  regimes.get(i, "") + (" " + ",".join(reasons) if reasons else ""))
    host = sample.get("host", {})
    cores = host.get("cpu", [])
    cpu = Text()
    if cores:
        cpu.append(f"CPU {len(cores)} cores  max {max(cores):.0f}%  mean {sum(cores) / len(cores):.0f}%  "
                   f"iowait {host.get('iowait', 0):.0f}%\n")
        cpu.append("".join("▁▁▂▃▄▅▆▇█"[min(8, int(c / 12.5))] for c in cores[:72]))
    disk = Text(f"\ndisk read {host.get('disk_rd_bps', 0) / 1e6:.0f} MB/s  write {host.get('disk_wr_bps', 0) / 1e6:.0f}"
                f" MB/s  net rx {host.get('net_rx_bps', 0) / 1e6:.0f} MB/s  swap-in {host.get('swapin_s', 0):.0f}/s",
                style="dim")
    parts = ([t] if sample.get("gpus") else []) + [cpu, disk, Text("Ctrl-C to stop", style="dim")]
    return Group(*parts)


def watch(
    store_path: Optional[Path] = typer.Option(None, "--store", help="Run store (SQLite)."),
    no_store: bool = typer.Option(False, "--no-store", help="Do not keep this watch in the store."),
    period: float = typer.Option(0.1, "--period", min=0.02, max=10.0, help="Sampling period in seconds."),
    seconds: Optional[float] = typer.Option(None, "--seconds", help="Stop after this many seconds."),
    budget: Optional[Path] = typer.Option(None, "--budget", help="A TOML budget file; violations are findings."),
    fail_on: str = typer.Option("never", "--fail-on", help="Exit 1 when a finding is at or above this severity."),
) -> None:
    """Watch every GPU and the host live; Ctrl-C leaves with a summary."""
    from gputriage.backends.host import Host
    from gputriage.backends.nvml import PynvmlBackend
    from gputriage.cli.common import exit_for, parse_fail_on
    from gputriage.monitor import classify
    from gputriage.monitor.budget import check_samples
    from gputriage.monitor.session import Session

    threshold = parse_fail_on(fail_on)
    budget_obj = budget_or_fail(budget)
    store = store_or_fail(store_path, no_store)
    session = Session(PynvmlBackend(record=False, bounded=False), Host(), store, "watch", ["watch"], period_s=period)
    if not session.gpus:
        err.print(f"gputriage: no GPU to watch ({session.system.get('nvml', 'NVML sees no GPU')}); showing the host")
    session.start()
    t_end = time.monotonic() + seconds if seconds else None
    regimes: dict[int, str] = {}
    try:
        with Live(Text("sampling…"), console=out, refresh_per_second=4, transient=False) as live:
            while t_end is None or time.monotonic() < t_end:
                time.sleep(0.25)
                samples = session.sampler.samples
                if not samples:
                    continue
                recent = [s for s in samples[-10:]]
                for i in session.gpus:
                    m = classify.window_metrics(recent, i)
                    regimes[i] = classify.label(m, session.info.get(i, {}))[0].value
                live.update(frame(samples[-1], session.info, regimes))
    except KeyboardInterrupt:
        pass
    extra = check_samples(budget_obj, session.sampler.samples, session.gpus, session.info) if budget_obj else []
    verdict, findings = session.finish(0, extra)
    from gputriage.report.run_terminal import render

    render({"id": session.run_id, "kind": "watch", "command": ["watch"], "meta": session.meta,
            "started": session.sampler.samples[0]["t"] if session.sampler.samples else None,
            "ended": session.sampler.samples[-1]["t"] if session.sampler.samples else None},
           verdict["per_gpu"], findings, out)
    if store is not None:
        store.close()
    raise typer.Exit(exit_for(findings, threshold))
