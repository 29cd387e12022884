"""`bench`: the machine's ceilings against its datasheet."""

from __future__ import annotations

import os
import socket
import sqlite3
from pathlib import Path
from typing import Callable

from gputriage.api._common import GputriageError, open_store
from gputriage.backends.host import Host
from gputriage.backends.nvml import PynvmlBackend
from gputriage.diagnosis import bench as judge
from gputriage.diagnosis.verify import Context, with_verify
from gputriage.model.bench import BenchError, BenchReport, BenchResult, GpuProcess
from gputriage.model.probe import ProbeResult
from gputriage.model.specs import match
from gputriage.probes import bench as b
from gputriage.probes import disk as d
from gputriage.sampling.sampler import Cadences, Sampler
from gputriage.sampling.session import gpu_static
from gputriage.sampling.store import Store

STORE_PROBE = "store"  # the BenchError naming a store that could not keep the results


def bench(
    *,
    quick: bool = False,
    disk: str | Path | bool | None = None,
    gpu: bool = True,
    store: str | Path | bool | None = None,
    progress: Callable[[str], None] = lambda _what: None,
) -> BenchReport:
    """The machine's ceilings against its datasheet (see `probes`); `progress` hears what runs now. The store
    (`store`: a path, None for the default, False for none) is checked writable before any probe runs
    (GputriageError); if it fails to take the results afterwards, they are still returned, with an error
    named "store"."""
    target = Path(disk) if isinstance(disk, (str, Path)) else Path(os.getcwd())
    if disk is not False and not target.is_dir():
        raise GputriageError(f"{target}: not a directory")
    db = open_store(store)  # before the probes: minutes of measurements are not run into a store that refuses them
    try:
        report, machine, results = _measure(quick, disk is not False, target, gpu, progress)
        if db is not None:
            _keep(db, machine, results, report)
        return report
    finally:
        if db is not None:
            db.close()


def _measure(
    quick: bool, disk: bool, target: Path, gpu: bool, progress: Callable[[str], None]
) -> tuple[BenchReport, str, list[ProbeResult]]:
    nvml = PynvmlBackend(record=False, bounded=False)
    gpus, info, system = gpu_static(nvml)
    g0 = info.get(0)
    pci = nvml.call("nvmlDeviceGetPciInfo_v3", 0) if gpus else None
    dev_id = f"0x{int(pci['pciDeviceId']) >> 16:04x}" if isinstance(pci, dict) else None
    spec = match(dev_id, g0.memory_total_bytes, g0.name) if g0 else None
    link = (g0.pcie_gen_max, g0.pcie_width_max) if g0 and g0.pcie_gen_max and g0.pcie_width_max else None
    results: list[ProbeResult] = []
    errors: list[dict[str, str]] = []
    others = b.others_on_gpus(nvml, gpus) if gpus and gpu else []  # no CUDA context of ours yet
    if gpus and gpu:
        sampler = Sampler(nvml, Host(), gpus[:1], cadences=Cadences(gpu_s=0.1, ring_s=3600.0))
        sampler.start()
        progress("GPU probes (torch in a child process)")
        bus = pci.get("busId", "").lower()[4:] if isinstance(pci, dict) else None
        rows = b.run_gpu_child(quick, lambda row: progress(f"GPU: {row.get('probe')}"), numa=b.numa_layout(bus))
        if len(gpus) > 1 and not quick:
            progress(f"NCCL all-reduce over {len(gpus)} GPUs")
            rows += b.run_collectives(lambda row: None)
        sampler.stop()
        seen = {o["pid"] for o in others}
        others += [o for o in b.others_on_gpus(nvml, gpus) if o["pid"] not in seen]  # the child has exited
        res, errs = b.to_results(rows, list(sampler.recent), spec, link)
        results += res
        errors += errs
    elif not gpus:
        errors.append({"probe": "gpu", "error": f"no GPU ({system.get('nvml', 'NVML sees none')}): host probes only"})
    if disk:
        progress(f"disk reads in {target}")
        try:
            results += d.probe(target, size_bytes=(128 << 20) if quick else (512 << 20), seconds=1.5 if quick else 4.0)
        except (ValueError, OSError) as exc:
            errors.append({"probe": "disk", "error": str(exc)})
    progress("host memory copy")
    results.append(d.host_memcpy((128 << 20) if quick else (512 << 20)))
    link_now = None
    if gpus:
        gen, width = nvml.call("nvmlDeviceGetCurrPcieLinkGeneration", 0), nvml.call("nvmlDeviceGetCurrPcieLinkWidth", 0)
        link_now = (gen, width) if isinstance(gen, int) and isinstance(width, int) else None
        nvml.shutdown()
    machine = socket.gethostname() + "|" + ",".join(str(info[i].uuid) for i in gpus)
    report = BenchReport(
        gpu=g0.name if g0 else None,
        spec=spec.name if spec else None,
        spec_matched_by=spec.matched_by if spec else None,
        quick=quick,
        results=[BenchResult(**r.to_json(), band=list(bd) if (bd := judge.band(r.name)) else None) for r in results],
        errors=[BenchError(e.get("probe", "?"), e.get("error", "")) for e in errors],
        other_processes=[GpuProcess(gpu=o["gpu"], pid=o["pid"], used_bytes=o.get("used_bytes")) for o in others],
        findings=with_verify(judge.findings(results, link_now, others), Context("bench")),
    )
    return report, machine, results


def _keep(db: Store, machine: str, results: list[ProbeResult], report: BenchReport) -> None:
    """Each result's change since this machine's last bench, and this bench kept; a store that fails now is an
    error in the report (the results are not lost)."""
    try:
        previous = db.last_bench(machine)
    except (sqlite3.Error, ValueError):  # an unreadable earlier bench: no change to give
        previous = None
    try:
        db.add_bench(machine, [r.to_json() for r in results])
    except sqlite3.Error as exc:
        report.errors.append(BenchError(STORE_PROBE, f"not kept: cannot write the run store {db.path}: {exc}"))
        return
    changes = judge.compare(results, previous["results"] if previous else None)
    for r in report.results:
        r.change_pct = changes.get(r.name)
