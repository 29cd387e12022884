"""`gputriage bench`: the machine's real ceilings against its datasheet."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from gputriage.cli import exits
from gputriage.cli.common import FAIL_ON_HELP, api_errors, exit_for, fail, out, parse_fail_on, print_json, spinner


def _specs(as_json: bool) -> None:
    from rich.table import Table

    from gputriage.model.specs import all_specs, database

    specs = all_specs()
    if as_json:
        print_json({"specs": [s.data for s in specs], "about": database()["about"], "sources": database()["sources"]})
        return
    t = Table(header_style="bold", box=None)
    t.add_column("GPU", no_wrap=True)
    t.add_column("datasheet (dense TFLOP/s, FP32 accumulate)", overflow="fold")
    for s in specs:
        d = s.data
        rates = " ".join(
            f"{k.split('_')[0]} {d[k]:g}"
            for k in ("fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops", "fp8_tflops")
            if d.get(k)
        )
        pci = ",".join(d["pci_device_ids"]) or "by name"
        t.add_row(
            s.name,
            f"{rates} · {d['memory_gb']} GB {d['memory_bw_gbs']} GB/s · {d['sm_count']} SMs · "
            f"CC {d['compute_capability']} · Gen{d['pcie_gen']} x{d['pcie_width']} · {d['tdp_w']} W · "
            f"PCI {pci}",
        )
    out.print(t)
    out.print("[dim]Dense TFLOP/s with FP32 accumulate; sources in `bench --specs --json`.[/dim]")


def bench(
    quick: bool = typer.Option(False, "--quick", help="Fewer shapes and dtypes, smaller buffers (~15 s)."),
    specs: bool = typer.Option(False, "--specs", help="List the spec database and exit."),
    disk: Optional[Path] = typer.Option(
        None, "--disk", metavar="DIR", help="Directory to probe disk reads in (default: here)."
    ),
    no_disk: bool = typer.Option(False, "--no-disk", help="Skip the disk probes."),
    no_gpu: bool = typer.Option(False, "--no-gpu", help="Skip the GPU probes."),
    as_json: bool = typer.Option(False, "--json", help="Print results as JSON (schema gputriage.bench/2)."),
    store_path: Optional[Path] = typer.Option(None, "--store", metavar="FILE", help="Where results are kept (SQLite)."),
    no_store: bool = typer.Option(
        False, "--no-store", help="Do not keep the results (nor compare with the last bench)."
    ),
    fail_on: str = typer.Option("never", "--fail-on", metavar="LEVEL", help=FAIL_ON_HELP),
) -> None:
    """Measure GEMM rates per dtype, memory and PCIe bandwidth, launch costs, peer copies, disk and host
    memory, against the datasheet, with the conditions each ran under."""
    if specs:
        _specs(as_json)
        return
    from gputriage import api
    from gputriage.api.bench import STORE_PROBE
    from gputriage.report.bench_terminal import render

    threshold = parse_fail_on(fail_on)
    with spinner() as say, api_errors():
        report = api.bench(
            quick=quick,
            disk=False if no_disk else disk,
            gpu=not no_gpu,
            store=False if no_store else store_path,
            progress=say,
        )
    if as_json:
        print_json(report)
    else:
        render(report, out)
    lost = next((e.error for e in report.errors if e.probe == STORE_PROBE), None)
    if lost is not None:  # the results are printed above; that they were not kept is an error
        fail(lost, exits.BAD_INPUT)
    raise typer.Exit(exit_for(report.findings, threshold))
