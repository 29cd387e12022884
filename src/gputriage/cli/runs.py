"""`gputriage runs` and `gputriage show RUN`: what the store holds."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table
from rich.text import Text

from gputriage.cli import exits
from gputriage.cli.common import fail, out, print_json


def _open(store_path: Optional[Path]):  # noqa: ANN202
    from gputriage.monitor.store import Store, StoreError

    if store_path is not None and not store_path.exists():
        fail(f"{store_path}: no such run store", exits.BAD_INPUT)
    try:
        return Store(store_path)
    except StoreError as exc:
        fail(str(exc), exits.BAD_INPUT)


def runs(
    store_path: Optional[Path] = typer.Option(None, "--store", help="Run store (SQLite)."),
    as_json: bool = typer.Option(False, "--json", help="Print {\"runs\": [...]}."),
    limit: int = typer.Option(50, "--limit", "-n", help="How many recent runs."),
) -> None:
    """List the runs and watches kept in the store, newest first."""
    store = _open(store_path)
    listed = store.runs(limit)
    if as_json:
        print_json({"runs": listed})
        return
    t = Table(header_style="bold", box=None)
    for col in ("id", "kind", "started", "dur", "exit", "samples", "bottleneck", "command"):
        t.add_column(col, overflow="ellipsis", no_wrap=True, max_width=40 if col == "command" else None)
    for r in listed:
        started = dt.datetime.fromtimestamp(r["started"]).strftime("%m-%d %H:%M:%S")
        dur = f"{r['ended'] - r['started']:.0f}s" if r["ended"] else "[yellow]incomplete[/]"
        t.add_row(str(r["id"]), r["kind"], started, dur, "" if r["exit_code"] is None else str(r["exit_code"]),
                  str(r["samples"]), r["bottleneck"] or "-", Text(" ".join(r["command"])))
    out.print(t)


def show(
    run_id: int = typer.Argument(..., help="A run id from `gputriage runs`."),
    store_path: Optional[Path] = typer.Option(None, "--store", help="Run store (SQLite)."),
    as_json: bool = typer.Option(False, "--json", help="Print the run as JSON."),
) -> None:
    """Re-render a stored run. A run whose gputriage died is judged from the samples it kept."""
    from gputriage.model.finding import Finding
    from gputriage.monitor import classify
    from gputriage.monitor.session import gpus_of_workload, run_findings

    store = _open(store_path)
    run = store.run(run_id)
    if run is None:
        fail(f"no run {run_id} in {store.path}", exits.BAD_INPUT)
    verdicts = (run.get("verdict") or {}).get("per_gpu")
    findings = [Finding.from_json(f) for f in run.get("findings") or []]
    if verdicts is None:  # incomplete run: judge what was kept
        samples = list(store.samples(run_id))
        gpus = [int(k) for k in run["meta"].get("gpus", {})]
        info = {int(k): v for k, v in run["meta"].get("gpus", {}).items()}
        per = {i: classify.verdict(samples, i, info.get(i, {})) for i in gpus_of_workload(samples, gpus)} if gpus else {}
        verdicts = {str(k): v for k, v in per.items()}
        findings = run_findings(per, samples, info, workload=run.get("kind") == "run")
        if samples:
            run["ended_sample"] = samples[-1]["t"]
    stored = run.get("verdict") or {}
    if as_json:
        print_json(run | {"verdict": stored | {"per_gpu": verdicts}, "findings": [f.to_json() for f in findings]})
        return
    from gputriage.report.run_terminal import render

    render(run, verdicts, findings, out)
    merged = stored.get("merged") or {}
    if merged.get("bottleneck"):  # a `run --profile`: the sampler's and the trace's verdicts together
        out.print(f"[bold]verdict:[/] [bold magenta]{merged['bottleneck']}[/] ({merged.get('why', merged['source'])})")
