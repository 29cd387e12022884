"""`bench`: the machine's real ceilings against its datasheet.

The GPU probes run in a child (`gputriage.probes.gpu_bench`) while this process samples NVML, so
each result carries the conditions it ran under (SM clock, power, temperature, clock-event
reasons); the host probes (disk, memory copy) run here. Each measured value carries its datasheet
figure; `diagnosis.bench` sets it against a healthy band.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any, Callable, Collection

from gputriage.backends.nvml_queries import compute_processes
from gputriage.model.clock_events import decode_reasons
from gputriage.model.numbers import median
from gputriage.model.probe import ProbeResult
from gputriage.model.sample import Sample
from gputriage.model.specs import GpuSpec, pcie_link_gbs

DTYPE_FIELD = {
    "fp32": "fp32_tflops",
    "tf32": "tf32_tflops",
    "fp16": "fp16_tflops",
    "bf16": "bf16_tflops",
    "fp8_e4m3": "fp8_tflops",
}
CHILD_TIMEOUT_S = {"quick": 60, "full": 180}


def reference(probe: str, spec: GpuSpec | None, link: tuple[int, int] | None) -> float | None:
    if probe.startswith("matmul.") and spec is not None:
        return spec.data.get(DTYPE_FIELD.get(probe.split(".", 1)[1], ""))
    if probe in ("memory.copy", "memory.read") and spec is not None:
        return spec.memory_bw_gbs
    if probe.startswith("pcie.") and link:
        gen, width = link
        return round(pcie_link_gbs(gen, width), 1) or None
    return None


def conditions(samples: list[Sample], t0: float, t1: float, gpu: int = 0) -> dict[str, Any]:
    """SM clock, power, temperature and clock-event reasons while a probe ran (from t0 to t1)."""
    rows = [g for s in samples if t0 <= s.t_s <= t1 if (g := s.gpu(gpu)) is not None]
    if not rows:
        return {}

    def med(values: list[Any]) -> float | None:
        vals = [v for v in values if v is not None]
        return median(vals) if vals else None

    reasons: set[str] = set()
    for r in rows:
        reasons.update(x for x in decode_reasons(r.clock_event_reasons or 0) if x != "gpu_idle")
    power = med([r.power_mw for r in rows])
    return {
        "sm_clock_mhz": med([r.sm_clock_mhz for r in rows]),
        "power_w": round(power / 1000, 1) if power else None,
        "temperature_c": med([r.temperature_c for r in rows]),
        "clock_event_reasons": sorted(reasons),
        "samples": len(rows),
    }


def numa_layout(bus_id: str | None, root: str = "/") -> tuple[int, list[int]] | None:
    """(the GPU's NUMA node, every node) when the machine has several nodes; else None."""
    base = os.path.join(root, "sys/devices/system/node")
    try:
        nodes = sorted(int(n[4:]) for n in os.listdir(base) if n.startswith("node") and n[4:].isdigit())
        gpu_node = int(open(os.path.join(root, f"sys/bus/pci/devices/{bus_id}/numa_node")).read().strip())
    except (OSError, ValueError, TypeError):
        return None
    return (gpu_node, nodes) if len(nodes) > 1 and gpu_node >= 0 else None


def run_gpu_child(
    quick: bool, on_line: Callable[[dict[str, Any]], None], numa: tuple[int, list[int]] | None = None
) -> list[dict[str, Any]]:
    argv = [sys.executable, "-m", "gputriage.probes.gpu_bench"] + (["--quick"] if quick else [])
    if numa is not None:
        argv += ["--numa", str(numa[0]), ",".join(map(str, numa[1]))]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, stdin=subprocess.DEVNULL
    )
    rows = []
    deadline = time.monotonic() + CHILD_TIMEOUT_S["quick" if quick else "full"]
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            rows.append(row)
            on_line(row)
            if time.monotonic() > deadline:
                rows.append({"probe": "gpu", "error": "the GPU probes ran past their time bound and were stopped"})
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    if proc.returncode not in (0, None) and proc.returncode < 0:
        rows.append({"probe": "gpu", "error": f"the GPU probe process died (signal {-proc.returncode})"})
    return rows


def run_collectives(
    on_line: Callable[[dict[str, Any]], None], timeout_s: float = 120.0, extra: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """All-reduce bus bandwidth over every visible GPU (NCCL, one process per GPU), as result rows."""
    argv = [sys.executable, "-m", "gputriage.probes.collectives", *extra]
    t0 = time.time()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return [{"probe": "allreduce", "error": f"did not finish within {timeout_s:g} s"}]
    rows = []
    for line in p.stdout.splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    errors = [r for r in rows if "error" in r]
    sizes = [r for r in rows if "busbw_gbs" in r]
    if errors or not sizes:
        return errors or [{"probe": "allreduce", "error": (p.stderr.strip().splitlines() or ["no output"])[-1][:200]}]
    best = max(sizes, key=lambda r: r["busbw_gbs"])
    row = {
        "probe": "allreduce.busbw",
        "value": best["busbw_gbs"],
        "unit": "GB/s",
        "t0": t0,
        "t1": time.time(),
        "detail": {
            "world": best["world"],
            "best_at_bytes": best["bytes"],
            "backend": best["backend"],
            "sizes": [{k: r[k] for k in ("bytes", "time_us", "algbw_gbs", "busbw_gbs")} for r in sizes],
        },
    }
    on_line(row)
    return [row]


def to_results(
    rows: list[dict[str, Any]], samples: list[Sample], spec: GpuSpec | None, link: tuple[int, int] | None
) -> tuple[list[ProbeResult], list[dict[str, Any]]]:
    results, errors = [], []
    for row in rows:
        if "error" in row:
            errors.append(row)
            continue
        if row.get("probe") == "device":
            continue
        cond = conditions(samples, row.get("t0", 0), row.get("t1", 0))
        results.append(
            ProbeResult(
                row["probe"],
                row["value"],
                row["unit"],
                reference(row["probe"], spec, link),
                cond,
                row.get("detail", {}),
            )
        )
    return results, errors


def others_on_gpus(nvml: Any, gpus: list[int], exclude: Collection[int] = frozenset()) -> list[dict[str, Any]]:
    """Compute processes on these GPUs that are not the bench's own (pid, GPU, VRAM bytes)."""
    return [
        {"gpu": i, **p} for i, procs in compute_processes(nvml, gpus).items() for p in procs if p["pid"] not in exclude
    ]
