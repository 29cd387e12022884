"""`gputriage check`: the triage playbook on this machine (or on a recorded snapshot)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from gputriage.cli import exits
from gputriage.cli.common import FAIL_ON_HELP, IDLE_AFTER, err, exit_for, fail, out, parse_fail_on, print_json


def check(
    from_file: Optional[Path] = typer.Option(
        None, "--from", metavar="FILE", help="Evaluate a recorded snapshot instead of this machine."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON (schema gputriage.check/1)."),
    markdown: bool = typer.Option(False, "--markdown", help="Print the report as Markdown."),
    fail_on: str = typer.Option("critical", "--fail-on", metavar="LEVEL", help=FAIL_ON_HELP),
    save: Optional[Path] = typer.Option(None, "--save", metavar="FILE", help="Also write the snapshot to this file."),
    budget: Optional[Path] = typer.Option(
        None, "--budget", metavar="FILE", help="A TOML budget file; violations become findings."
    ),
    window: float = typer.Option(
        0.5,
        "--window",
        metavar="SECONDS",
        min=0.1,
        max=10.0,
        help="Seconds over which CPU and GPM activity are measured.",
    ),
    no_load: bool = typer.Option(False, "--no-load", help="Do not run the brief GPU load used to read the PCIe link."),
    no_framework: bool = typer.Option(False, "--no-framework", help="Do not start the torch probe."),
    refresh: bool = typer.Option(False, "--refresh", help="Re-import torch even if its answer is cached."),
    full: bool = typer.Option(False, "--full", help="Also run the quick disk-read probes (~2 s, 64 MiB temp file)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show every finding, OK ones included."),
    price: Optional[float] = typer.Option(
        None,
        "--price",
        metavar="PER_GPU_HOUR",
        min=0.0,
        help="Price per GPU-hour: the GPU-hours a process held idle are also said "
        "in money (default: price_per_gpu_hour under [cost] in the config "
        "file; no price is assumed).",
    ),
    currency: Optional[str] = typer.Option(
        None, "--currency", help="Currency of --price (default: the config file's, else USD)."
    ),
    idle_held_min_s: Optional[float] = IDLE_AFTER,
) -> None:
    """Run the triage playbook: driver, link, utilization, VRAM, CPU, disk, memory, container, Xid, power,
    thermals, NUMA, network. Findings come in five steps: is the GPU used, is it starved or choking, VRAM,
    the input pipeline, platform integrity."""
    from gputriage import api
    from gputriage.model.snapshot import Snapshot, SnapshotError

    threshold = parse_fail_on(fail_on)
    if from_file is not None:
        try:
            snap = Snapshot.load(from_file)
        except SnapshotError as exc:
            fail(str(exc), exits.BAD_INPUT)
    else:
        with err.status("reading the machine…", spinner="dots") if err.is_terminal else _null():
            snap = api.snapshot(
                window_s=window, load=not no_load, framework=not no_framework, refresh=refresh, full=full
            )
    if save is not None:
        try:
            snap.save(save)
        except OSError as exc:
            fail(f"cannot write {save}: {exc.strerror or exc}", exits.BAD_INPUT)
    try:
        report = api.check(
            snap, budget=budget, price_per_gpu_hour=price, currency=currency, idle_held_min_s=idle_held_min_s
        )
    except api.GputriageError as exc:
        fail(str(exc), exits.BAD_INPUT)
    if as_json:
        print_json(report)
    elif markdown:
        from gputriage.report.check_markdown import render as render_md

        out.print(render_md(report), markup=False)
    else:
        from gputriage.report.check_terminal import render as render_term

        render_term(report, out, verbose=verbose)
    raise typer.Exit(exit_for(report.findings, threshold))


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
