"""`bench`: the machine's real ceilings against its datasheet.

The GPU probes run in a child (`gputriage.probes.gpu_bench`) while this process samples NVML, so
each result carries the conditions it ran under (SM clock, power, temperature, clock-event
reasons); the host probes (disk, memory copy) run here. Each measured value is set against its
datasheet figure and a healthy band; below the band is a finding with a decision.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any, Callable

from gputriage.backends.nvml import compute_processes
from gputriage.collect.power_thermal import decode_reasons
from gputriage.model.finding import Finding, Severity
from gputriage.model.numbers import median
from gputriage.model.probe import ProbeResult
from gputriage.model.specs import GpuSpec, pcie_link_gbs

# healthy share of the datasheet figure: (low, high); measured GEMMs reach ~80% of dense peak,
# copies ~90% of HBM bandwidth, pinned PCIe copies ~85-88% of the raw link rate
BANDS = {"matmul": (0.60, 1.25), "memory.copy": (0.75, 1.05), "memory.read": (0.75, 1.05),
         "pcie.h2d_pinned": (0.70, 1.0), "pcie.d2h_pinned": (0.70, 1.0), "pcie.h2d_pinned_node": (0.70, 1.0)}
DTYPE_FIELD = {"fp32": "fp32_tflops", "tf32": "tf32_tflops", "fp16": "fp16_tflops", "bf16": "bf16_tflops",
               "fp8_e4m3": "fp8_tflops"}
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


def band(probe: str) -> tuple[float, float] | None:
    if probe.startswith("matmul."):
        return BANDS["matmul"]
    if probe.startswith("pcie.h2d_pinned_node"):
        return BANDS["pcie.h2d_pinned_node"]
    return BANDS.get(probe)


def conditions(samples: list[dict[str, Any]], t0: float, t1: float, gpu: int = 0) -> dict[str, Any]:
    rows = [g for s in samples if t0 <= s["t"] <= t1 for g in s.get("gpus", []) if g.get("index") == gpu]
    if not rows:
        return {}
    def med(key: str) -> float | None:
        vals = [r[key] for r in rows if key in r]
        return median(vals) if vals else None
    reasons = set()
    for r in rows:
        reasons.update(x for x in decode_reasons(r.get("reasons", 0)) if x != "gpu_idle")
    power = med("power")
    return {"sm_clock_mhz": med("sm_clk"), "power_w": round(power / 1000, 1) if power else None,
            "temperature_c": med("temp"), "clock_event_reasons": sorted(reasons), "samples": len(rows)}


def numa_layout(bus_id: str | None, root: str = "/") -> tuple[int, list[int]] | None:
    """(the GPU's NUMA node, every node) when the machine has several nodes; else None."""
    base = os.path.join(root, "sys/devices/system/node")
    try:
        nodes = sorted(int(n[4:]) for n in os.listdir(base) if n.startswith("node") and n[4:].isdigit())
        gpu_node = int(open(os.path.join(root, f"sys/bus/pci/devices/{bus_id}/numa_node")).read().strip())
    except (OSError, ValueError, TypeError):
        return None
    return (gpu_node, nodes) if len(nodes) > 1 and gpu_node >= 0 else None


def run_gpu_child(quick: bool, on_line: Callable[[dict[str, Any]], None],
                  numa: tuple[int, list[int]] | None = None) -> list[dict[str, Any]]:
    argv = [sys.executable, "-m", "gputriage.probes.gpu_bench"] + (["--quick"] if quick else [])
    if numa is not None:
        argv += ["--numa", str(numa[0]), ",".join(map(str, numa[1]))]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            stdin=subprocess.DEVNULL)
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


def run_collectives(on_line: Callable[[dict[str, Any]], None], timeout_s: float = 120.0,
                    extra: tuple[str, ...] = ()) -> list[dict[str, Any]]:
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
    row = {"probe": "allreduce.busbw", "value": best["busbw_gbs"], "unit": "GB/s", "t0": t0, "t1": time.time(),
           "detail": {"world": best["world"], "best_at_bytes": best["bytes"], "backend": best["backend"],
                      "sizes": [{k: r[k] for k in ("bytes", "time_us", "algbw_gbs", "busbw_gbs")} for r in sizes]}}
    on_line(row)
    return [row]


def to_results(rows: list[dict[str, Any]], samples: list[dict[str, Any]], spec: GpuSpec | None,
               link: tuple[int, int] | None) -> tuple[list[ProbeResult], list[dict[str, Any]]]:
    results, errors = [], []
    for row in rows:
        if "error" in row:
            errors.append(row)
            continue
        if row.get("probe") == "device":
            continue
        cond = conditions(samples, row.get("t0", 0), row.get("t1", 0))
        results.append(ProbeResult(row["probe"], row["value"], row["unit"], reference(row["probe"], spec, link),
                                   cond, row.get("detail", {})))
    return results, errors


def others_on_gpus(nvml: Any, gpus: list[int], exclude: set[int] = frozenset()) -> list[dict[str, Any]]:
    """Compute processes on these GPUs that are not the bench's own (pid, GPU, VRAM bytes)."""
    return [{"gpu": i, **p} for i, procs in compute_processes(nvml, gpus).items() for p in procs
            if p["pid"] not in exclude]


def findings(results: list[ProbeResult], link_now: tuple[int, int] | None,
             others: list[dict[str, Any]] | None = None) -> list[Finding]:
    out = []
    if others:
        pids = sorted({o["pid"] for o in others})
        out.append(Finding(
            id="bench.gpu_shared", severity=Severity.warn, step=3, subject="gpu.0",
            symptom=f"{len(pids)} other process(es) used the GPU during the bench (pid {', '.join(map(str, pids))})",
            cause="The GPU time-slices between processes: every GPU figure here is a share, not this machine's "
                  "ceiling",
            decision="Bench again on an idle GPU (stop or wait for those processes)",
            evidence={"other_processes": others}))
    for r in results:
        b = band(r.name)
        pct = r.pct_of_reference
        if b is None or pct is None or pct / 100 >= b[0]:
            continue
        reasons = r.conditions.get("clock_event_reasons", [])
        evidence = {"probe": r.name, "measured": r.value, "unit": r.unit, "datasheet": r.reference,
                    "pct_of_datasheet": round(pct, 1), "healthy_from_pct": round(100 * b[0]), **r.conditions}
        if r.name.startswith("matmul."):
            throttled = [x for x in reasons if x != "sw_power_cap"]
            if throttled:
                cause = f"Clocks were held down during the probe ({', '.join(throttled)})"
                decision = "Fix cooling or power delivery before trusting any throughput number"
            elif "sw_power_cap" in reasons:
                cause = "The GPU sat at its power limit: clocks dropped to stay under it"
                decision = "Check the enforced power limit (check: power.limit_lowered) and cooling; compare after"
            else:
                cause = "No throttle reason was active: another process on the GPU, MIG, or a slow library build"
                decision = "Run `gputriage check` (other processes, MIG, framework build) and bench again"
            sev = Severity.warn
        elif r.name.startswith("memory."):
            cause, decision, sev = ("Device memory bandwidth is far under its datasheet figure",
                                    "Check for other processes, ECC/row-remap state and clocks (`gputriage check`)",
                                    Severity.warn)
        else:
            degraded = link_now is not None and r.reference and pcie_link_gbs(*link_now) < r.reference
            cause = ("The link trained below its capability (see pcie.link_width/gen)" if degraded else
                     "Pinned copies run far under the link's capacity: a degraded link, or the pinned buffer sits on "
                     "a NUMA node remote from the GPU")
            decision = ("Reseat the card / check BIOS bifurcation and risers" if degraded else
                        "Pin the process to the GPU's NUMA node (numactl --cpunodebind) and check the link under load")
            sev = Severity.warn
        out.append(Finding(id=f"bench.{r.name}_low", severity=sev, step=2 if r.name.startswith(("matmul", "memory"))
                           else 5, symptom=f"{r.name}: {r.value} {r.unit}, {pct:.0f}% of the datasheet's {r.reference}",
                           cause=cause, decision=decision, evidence=evidence, subject="gpu.0"))
    return out


def compare(results: list[ProbeResult], previous: list[dict[str, Any]] | None) -> dict[str, float]:
    """Change since the last bench on this machine, in percent, per probe."""
    if not previous:
        return {}
    before = {r["name"]: r["value"] for r in previous if isinstance(r.get("value"), (int, float))}
    return {r.name: round(100.0 * (r.value - before[r.name]) / before[r.name], 1)
            for r in results if before.get(r.name)}

