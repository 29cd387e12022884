"""`gputriage fleet check|bench --ray ADDRESS`: the playbook on every GPU node of a Ray cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from gputriage.cli import exits
from gputriage.cli.common import (
    FAIL_ON_HELP,
    IDLE_AFTER,
    api_errors,
    err,
    exit_for,
    fail,
    out,
    parse_fail_on,
    print_json,
)

fleet_app = typer.Typer(
    help="Check (and quick-bench) every GPU node of a Ray cluster; find the node that is off.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _run(
    address: str,
    bench: bool,
    timeout: float,
    all_nodes: bool,
    price: Optional[float],
    currency: str,
    store_path: Optional[Path],
    no_store: bool,
    as_json: bool,
    fail_on: str,
    idle_held_min_s: Optional[float],
) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from gputriage.api.fleet import fleet_check

    threshold = parse_fail_on(fail_on)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as progress:
        task = progress.add_task("joining the cluster", total=None)
        with api_errors():
            report = fleet_check(
                address,
                bench=bench,
                timeout_s=timeout,
                all_nodes=all_nodes,
                price_per_gpu_hour=price,
                currency=currency,
                store=False if no_store else store_path,
                idle_held_min_s=idle_held_min_s,
                progress=lambda done, total, what: progress.update(
                    task, completed=done, total=total, description=f"nodes ({what})"
                ),
            )
    if as_json:
        print_json(report)
    else:
        from gputriage.report.fleet_terminal import render

        render(report, out)
    failed = any(not n.ok for n in report.nodes) or bool(report.outliers)
    findings = report.findings + [f for n in report.nodes for f in n.findings]
    raise typer.Exit(exits.FINDINGS if failed else exit_for(findings, threshold))


RAY = typer.Option(..., "--ray", metavar="ADDRESS", help="The Ray cluster's address (host:port, or 'auto').")
TIMEOUT = typer.Option(300.0, "--timeout", metavar="S", help="Per node: a node silent this long is reported failed.")
ALL = typer.Option(False, "--all-nodes", help="Check the nodes without GPUs too.")
PRICE = typer.Option(None, "--price", metavar="P", help="Price per GPU-hour: the idle share's cost.")
CURRENCY = typer.Option("USD", "--currency", metavar="CODE")
STORE = typer.Option(None, "--store", metavar="FILE", help="Where the report is kept (SQLite).")
NO_STORE = typer.Option(False, "--no-store", help="Do not keep it.")
JSON = typer.Option(False, "--json", help="Print the report as JSON (schema gputriage.fleet/1).")
FAIL_ON = typer.Option(
    "critical", "--fail-on", metavar="LEVEL", help=FAIL_ON_HELP + " (the fleet's or any node's finding)"
)


@fleet_app.command("check")
def check(
    address: str = RAY,
    timeout: float = TIMEOUT,
    all_nodes: bool = ALL,
    price: Optional[float] = PRICE,
    currency: str = CURRENCY,
    store_path: Optional[Path] = STORE,
    no_store: bool = NO_STORE,
    as_json: bool = JSON,
    fail_on: str = FAIL_ON,
    idle_held_min_s: Optional[float] = IDLE_AFTER,
) -> None:
    """Run `check` on every node with GPUs, one task pinned to each: findings by node; the fleet's findings
    (`gputriage rules --command fleet`): nodes whose figures fall below the fleet's (PCIe link, SM clock, power
    limit), drift in GPU model/driver/CUDA/torch/ECC/power limit, nodes that failed, GPUs Ray counts that a
    driver does not see; the idle share. Exit 1 when a node failed or is an outlier, or a finding (the fleet's
    or a node's) is at or above --fail-on; 3 when no Ray cluster answers at the address."""
    _run(address, False, timeout, all_nodes, price, currency, store_path, no_store, as_json, fail_on, idle_held_min_s)


@fleet_app.command("bench")
def bench(
    address: str = RAY,
    quick: bool = typer.Option(True, "--quick/--no-quick", help="Only the quick bench is run on a fleet."),
    timeout: float = TIMEOUT,
    all_nodes: bool = ALL,
    price: Optional[float] = PRICE,
    currency: str = CURRENCY,
    store_path: Optional[Path] = STORE,
    no_store: bool = NO_STORE,
    as_json: bool = JSON,
    fail_on: str = FAIL_ON,
    idle_held_min_s: Optional[float] = IDLE_AFTER,
) -> None:
    """`fleet check` plus `bench --quick` on each node: its bf16 rate and memory bandwidth set against the fleet's."""
    if not quick:
        fail("on a fleet only `bench --quick` runs (a full bench holds each GPU for minutes)", exits.USAGE)
    _run(address, True, timeout, all_nodes, price, currency, store_path, no_store, as_json, fail_on, idle_held_min_s)
