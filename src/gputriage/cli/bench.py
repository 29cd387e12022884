"""`gputriage bench`: the machine's real ceilings against its datasheet."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Optional

import typer

from gputriage.cli import exits
from gputriage.cli.common import err, exit_for, fail, out, parse_fail_on, print_json


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
        rates = " ".join(f"{k.split('_')[0]} {d[k]:g}" for k in ("fp32_tflops", "tf32_tflops", "bf16_tflops",
                                                                  "fp16_tflops", "fp8_tflops") if d.get(k))
        t.add_row(s.name, f"{rates} · {d['memory_gb']} GB {d['memory_bw_gbs']} GB/s · CC {d['compute_capability']} · "
                          f"Gen{d['pcie_gen']} x{d['pcie_width']} · {d['tdp_w']} W · PCI {','.join(d['pci_device_ids'])}")
    out.print(t)
    out.print("[dim]Dense TFLOP/s with FP32 accumulate; sources in `bench --specs --json`.[/dim]")


def bench(
    quick: bool = typer.Option(False, "--quick", help="Fewer shapes and dtypes, smaller buffers (~15 s)."),
    specs: bool = typer.Option(False, "--specs", help="List the spec database and exit."),
    disk: Optional[Path] = typer.Option(None, "--disk", help="Directory to probe disk reads in (default: here)."),
    no_disk: bool = typer.Option(False, "--no-disk", help="Skip the disk probes."),
    no_gpu: bool = typer.Option(False, "--no-gpu", help="Skip the GPU probes."),
    as_json: bool = typer.Option(False, "--json", help="Print results as JSON."),
    store_path: Optional[Path] = typer.Option(None, "--store", help="Where results are kept (SQLite)."),
    fail_on: str = typer.Option("never", "--fail-on", help="Exit 1 when a finding is at or above this severity."),
) -> None:
    """Measure GEMM rates per dtype, memory and PCIe bandwidth, launch costs, peer copies, disk and host
    memory, against the datasheet, with the conditions each ran under."""
    if specs:
        _specs(as_json)
        return
    threshold = parse_fail_on(fail_on)
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from gputriage.backends.host import Host
    from gputriage.backends.nvml import PynvmlBackend
    from gputriage.model.specs import match
    from gputriage.monitor.sampler import Sampler
    from gputriage.monitor.session import gpu_static
    from gputriage.monitor.store import Store, StoreError
    from gputriage.probes import bench as b
    from gputriage.probes import disk as d

    target = disk or Path(os.getcwd())
    if not no_disk and not target.is_dir():
        fail(f"{target}: not a directory", exits.BAD_INPUT)
    nvml = PynvmlBackend(record=False, bounded=False)
    gpus, info, system = gpu_static(nvml)
    g0 = info.get(0, {})
    pci = nvml.call("nvmlDeviceGetPciInfo_v3", 0) if gpus else None
    dev_id = f"0x{int(pci['pciDeviceId']) >> 16:04x}" if isinstance(pci, dict) else None
    spec = match(dev_id, g0.get("memory_total_bytes"), g0.get("name")) if gpus else None
    link = (g0["pcie_gen_max"], g0["pcie_width_max"]) if g0.get("pcie_gen_max") and g0.get("pcie_width_max") else None
    results, errors, rows = [], [], []
    others = b.others_on_gpus(nvml, gpus) if gpus and not no_gpu else []  # no CUDA context of ours yet
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err,
                  transient=True, disable=not err.is_terminal) as progress:
        task = progress.add_task("starting", total=None)
        if gpus and not no_gpu:
            sampler = Sampler(nvml, Host(), gpus[:1], period_s=0.1)
            sampler.start()
            progress.update(task, description="GPU probes (torch in a child process)")
            bus = pci.get("busId", "").lower()[4:] if isinstance(pci, dict) else None
            rows = b.run_gpu_child(quick, lambda row: progress.update(task, description=f"GPU: {row.get('probe')}"),
                                   numa=b.numa_layout(bus))
            if len(gpus) > 1 and not quick:
                progress.update(task, description=f"NCCL all-reduce over {len(gpus)} GPUs")
                rows += b.run_collectives(lambda row: None)
            samples = sampler.stop()
            seen = {o["pid"] for o in others}
            others += [o for o in b.others_on_gpus(nvml, gpus) if o["pid"] not in seen]  # the child has exited
            res, errs = b.to_results(rows, samples, spec, link)
            results += res
            errors += errs
        elif not gpus:
            errors.append({"probe": "gpu", "error": f"no GPU ({system.get('nvml', 'NVML sees none')}): host probes only"})
        if not no_disk:
            progress.update(task, description=f"disk reads in {target}")
            try:
                results += d.probe(target, size_bytes=(128 << 20) if quick else (512 << 20),
                                   seconds=1.5 if quick else 4.0)
            except (ValueError, OSError) as exc:
                errors.append({"probe": "disk", "error": str(exc)})
        progress.update(task, description="host memory copy")
        results.append(d.host_memcpy((128 << 20) if quick else (512 << 20)))
    link_now = None
    if gpus:
        gen, width = nvml.call("nvmlDeviceGetCurrPcieLinkGeneration", 0), nvml.call("nvmlDeviceGetCurrPcieLinkWidth", 0)
        link_now = (gen, width) if isinstance(gen, int) and isinstance(width, int) else None
        nvml.shutdown()
    found = b.findings(results, link_now, others)
    machine = socket.gethostname() + "|" + ",".join(str(info[i].get("uuid")) for i in gpus)
    changes: dict[str, float] = {}
    try:
        store = Store(store_path)
        previous = store.last_bench(machine)
        changes = b.compare(results, previous["results"] if previous else None)
        store.add_bench(machine, [r.to_json() for r in results])
        store.close()
    except StoreError as exc:
        errors.append({"probe": "store", "error": str(exc)})
    if as_json:
        print_json({"schema": "gputriage.bench", "version": 1, "gpu": g0.get("name"), "spec": spec.name if spec else None,
                    "quick": quick, "results": [r.to_json() | {"band": b.band(r.name), "change_pct": changes.get(r.name)}
                                                for r in results],
                    "errors": errors, "other_processes": others, "findings": [f.to_json() for f in found]})
    else:
        from gputriage.report.bench_terminal import render

        header = f"gputriage bench{' --quick' if quick else ''}: {g0.get('name') or 'no GPU'}" + \
                 (f" against {spec.name} datasheet" if spec else (" (no datasheet entry)" if gpus else ""))
        render(results, {r.name: b.band(r.name) for r in results}, changes, errors, found, header, out)
    raise typer.Exit(exit_for(found, threshold))
