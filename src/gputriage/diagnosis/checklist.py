"""The playbook's three checklists, automated where a measurement decides an item.

- box (a sane GPU machine): from `check`'s findings and facts — the power supply (hardware slowdown,
  a GPU fallen off the bus), cooling (thermal slowdown or violation time), storage (a slow filesystem),
  the driver (missing, mismatched, NVRM errors, Xid events), the chain NVML → container → framework;
  VRAM for the target model and locked versions are for the person.
- inference (stable on one GPU): from a run or a load test — VRAM at its peak under 90% of the GPU's;
  from a load test — p99 within the SLO at some load (the knee), no server error or dropped stream
  under load; request caps, batching and quantization are for the person.
- training (reliable on one GPU): from a run — tensor cores in use (no tensor_cores_idle; tensor pipes
  >= 30%), memory under control (no vram_pressure, peak < 95%), boring I/O (no input_starved, no
  iowait), a baseline kept (`gputriage baseline save`, or the run compared with one).
A failed item names the findings that failed it; without the run or snapshot an item needs, it is
unknown, not passed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gputriage.model.check import CheckReport
from gputriage.model.checklist import ChecklistReport, Item, Status
from gputriage.model.load import LoadReport
from gputriage.model.run import RunReport

KINDS = ("box", "training", "inference")
VRAM_HEADROOM_PCT = 90.0  # the seed: 90-95% of VRAM used is dangerously full
VRAM_PRESSURE_PCT = 95.0
TENSOR_BUSY_PCT = 30.0


def _by_findings(check: CheckReport | None, ids: tuple[str, ...], clean: str) -> tuple[Status, str, dict[str, Any]]:
    if check is None:
        return Status.unknown, "needs `gputriage check` (or --from SNAPSHOT)", {}
    hit = [f.id for f in check.findings if f.id in ids]
    if hit:
        return Status.failed, "check found: " + ", ".join(dict.fromkeys(hit)), {"findings": hit}
    return Status.passed, clean, {"looked_for": list(ids)}


def _vram_peak_pct(run: RunReport) -> float | None:
    peaks = []
    for key, v in run.verdict.per_gpu.items():
        static = run.meta.gpus.get(key)
        total = static.memory_total_bytes if static else None
        used = v.evidence.get("used_max_bytes")
        if total and isinstance(used, (int, float)):
            peaks.append(100 * used / total)
    return round(max(peaks), 1) if peaks else None


def _run_ids(run: RunReport | None) -> set[str]:
    return {f.id for f in run.findings} if run else set()


Verdict = tuple[Status, str, dict[str, Any]]
Decider = Callable[[CheckReport | None, RunReport | None, bool, LoadReport | None], Verdict]


def _question(why: str) -> Decider:
    def ask(check: CheckReport | None, run: RunReport | None, b: bool, load: LoadReport | None = None) -> Verdict:
        return Status.question, why, {}

    return ask


def _power(check: CheckReport | None, run: RunReport | None, b: bool,
        load: LoadReport | None = None) -> tuple[Status, str, dict[str, Any]]:
    return _by_findings(check, ("clocks.hw_slowdown", "pcie.fallen_off_bus", "gpu.lost"),
                        "no hardware slowdown and no GPU fallen off the bus")


def _cooling(check: CheckReport | None, run: RunReport | None, b: bool,
        load: LoadReport | None = None) -> tuple[Status, str, dict[str, Any]]:
    return _by_findings(check, ("clocks.thermal_slowdown", "thermal.violation_time", "thermal.near_slowdown"),
                        "no thermal slowdown, no time spent over the thermal limit, not near it")


def _storage(check: CheckReport | None, run: RunReport | None, b: bool,
        load: LoadReport | None = None) -> tuple[Status, str, dict[str, Any]]:
    return _by_findings(check, ("fs.slow_type", "fs.slow_reads", "fs.low_space"),
                        "the working directory's filesystem is local, fast and has room")


def _driver(check: CheckReport | None, run: RunReport | None, b: bool,
        load: LoadReport | None = None) -> tuple[Status, str, dict[str, Any]]:
    return _by_findings(check, ("driver.missing", "driver.version_mismatch", "kernel.nvrm_errors", "xid.event"),
                        "the driver loads, matches its library, and logged no NVRM error or Xid")


def _chain(check: CheckReport | None, run: RunReport | None, b: bool,
        load: LoadReport | None = None) -> tuple[Status, str, dict[str, Any]]:
    return _by_findings(check, ("driver.missing", "container.no_gpu_devices", "env.gpus_hidden",
                                "env.visible_devices_cut_short", "torch.cuda_unavailable", "torch.cpu_build",
                                "torch.arch_missing", "torch.cuda_newer_than_driver"),
                        "NVML sees the GPUs, the container passes them through, the framework uses them")


def _vram_budget(check: CheckReport | None, run: RunReport | None, b: bool,
        load: LoadReport | None = None) -> tuple[Status, str, dict[str, Any]]:
    peak = _vram_peak_pct(run) if run else _load_vram_peak_pct(load) if load else None
    if peak is None:
        return Status.unknown, "needs a run or a load test under load (--run ID, --load ID)", {}
    ok = peak < VRAM_HEADROOM_PCT
    return (Status.passed if ok else Status.failed,
            f"VRAM peaked at {peak}% of the GPU's ({'under' if ok else 'at or over'} {VRAM_HEADROOM_PCT:.0f}%)",
            {"vram_peak_pct": peak})


def _load_vram_peak_pct(load: LoadReport) -> float | None:
    peaks = [100 * g.used_max_bytes / g.total_bytes for s in load.steps for g in s.gpus
             if g.used_max_bytes and g.total_bytes]
    return round(max(peaks), 1) if peaks else None


def _tail(check: CheckReport | None, run: RunReport | None, b: bool,
          load: LoadReport | None = None) -> tuple[Status, str, dict[str, Any]]:
    if load is None:
        return Status.unknown, "needs a load test (gputriage load URL --slo ... --slo-percentile 99; --load ID)", {}
    slo = load.meta.slo
    if slo is None:
        return Status.unknown, "the load test had no SLO: give --slo (e.g. ttft=500ms,tpot=50ms)", {}
    met = [s for s in load.steps if s.meets_slo]
    at = (lambda s: s.concurrency if s.concurrency is not None else s.rate_per_s)
    if not met:
        return Status.failed, f"no step met the SLO at p{slo.percentile}, the lightest load included", {}
    top = met[-1]
    return (Status.passed, f"p{slo.percentile} within the SLO up to a load of {at(top):g}",
            {"knee": at(top), "ttft_p99_ms": top.ttft.p99_ms, "tpot_p99_ms": top.tpot.p99_ms})


def _no_failures(check: CheckReport | None, run: RunReport | None, b: bool,
                 load: LoadReport | None = None) -> tuple[Status, str, dict[str, Any]]:
    if load is None:
        return Status.unknown, "needs a load test (--load ID)", {}
    errors: dict[str, int] = {}
    for s in load.steps:
        for k, n in s.errors.items():
            errors[k] = errors.get(k, 0) + n
    bad = {k: n for k, n in errors.items() if k.startswith("http_5") or k in ("connect", "stream")}
    if bad:
        return Status.failed, "the server failed or dropped requests under load: " + ", ".join(
            f"{k} x{n}" for k, n in bad.items()), {"errors": bad}
    return Status.passed, f"{sum(s.requests for s in load.steps)} requests, no server error or dropped stream", {}


def _precision(check: CheckReport | None, run: RunReport | None, b: bool,
        load: LoadReport | None = None) -> tuple[Status, str, dict[str, Any]]:
    if run is None:
        return Status.unknown, "needs a run (--run ID)", {}
    idle = _run_ids(run) & {"run.tensor_cores_idle", "trace.tensor_cores_idle"}
    if idle:
        return Status.failed, "matrix math ran on CUDA cores: " + ", ".join(sorted(idle)), {"findings": sorted(idle)}
    tensor = [v.evidence.get("tensor_active_pct") for v in run.verdict.per_gpu.values()]
    busy = [t for t in tensor if isinstance(t, (int, float))]
    if busy and max(busy) >= TENSOR_BUSY_PCT:
        return Status.passed, f"tensor pipes {max(busy):.0f}% active", {"tensor_active_pct": max(busy)}
    return Status.unknown, "tensor-core use not seen either way (no GPM, or little matrix math)", {}


def _memory(check: CheckReport | None, run: RunReport | None, b: bool,
        load: LoadReport | None = None) -> tuple[Status, str, dict[str, Any]]:
    if run is None:
        return Status.unknown, "needs a run (--run ID)", {}
    peak = _vram_peak_pct(run)
    if "run.vram_pressure" in _run_ids(run) or (peak is not None and peak >= VRAM_PRESSURE_PCT):
        return Status.failed, f"VRAM under pressure (peak {peak}%)", {"vram_peak_pct": peak}
    return Status.passed, f"no VRAM pressure (peak {peak}%)", {"vram_peak_pct": peak}


def _io(check: CheckReport | None, run: RunReport | None, b: bool,
        load: LoadReport | None = None) -> tuple[Status, str, dict[str, Any]]:
    if run is None:
        return Status.unknown, "needs a run (--run ID)", {}
    hit = _run_ids(run) & {"run.input_starved", "trace.input_starved", "run.host_iowait"}
    if hit:
        return Status.failed, "the GPU waited on input: " + ", ".join(sorted(hit)), {"findings": sorted(hit)}
    return Status.passed, "no input starvation and no iowait in the run", {}


def _baseline(check: CheckReport | None, run: RunReport | None, baselines: bool,
              load: LoadReport | None = None) -> tuple[Status, str, dict[str, Any]]:
    if baselines or (run is not None and run.baseline is not None):
        return Status.passed, "a baseline is kept in the store", {}
    return Status.failed, "no baseline: `gputriage baseline save NAME RUN...` after a known-good run", {}


ITEMS: dict[str, list[tuple[str, Decider, str]]] = {
    "box": [
        ("Choose the GPU by VRAM first: if the target model just fits, it does not fit", _question(
            "how much VRAM the target model needs is yours to say (the GPUs' VRAM is in `gputriage check`)"), ""),
        ("A power supply that holds its transients: stability beats the theoretical peak", _power, "check"),
        ("Cooling is not optional: hot GPUs throttle, throttled GPUs lie about performance", _cooling, "check"),
        ("NVMe for datasets and checkpoints (it will not fix CPU preprocessing)", _storage, "check"),
        ("A known-good driver branch, not updated lightly near production", _driver, "check"),
        ("The chain end to end: nvidia-smi, the container's GPU pass-through, the framework's GPU", _chain, "check"),
        ("Versions locked (pip freeze or a lock file)", _question("whether versions are locked is yours to say"), ""),
    ],
    "inference": [
        ("A VRAM budget with headroom for peaks: 90-95% used is dangerously full", _vram_budget, "run"),
        ("Request sizes bounded: a context length and an output-token cap", _question(
            "the server's caps are yours to say (`gputriage load` shows where latency breaks)"), ""),
        ("Batching deliberate: unbounded dynamic batching can blow up VRAM", _question("yours to say"), ""),
        ("Quantization tested on long contexts and edge cases", _question("yours to say"), ""),
        ("Tail metrics watched (p95/p99) and correlated with VRAM and sequence length", _tail, "load"),
        ("No OOM and no restart under load: the server answers every request", _no_failures, "load"),
    ],
    "training": [
        ("A tiny run first: the loss falls, checkpoints are written, the data loader does not hang", _question(
            "yours to say"), ""),
        ("Mixed precision used properly (tensor cores, not CUDA cores)", _precision, "run"),
        ("Memory under control: batch size, gradient accumulation, checkpointing", _memory, "run"),
        ("Boring I/O: datasets on fast local storage, few small files, pre-tokenized", _io, "run"),
        ("Baselines captured: samples/s or tokens/s on a known sample, re-run after each change", _baseline,
         "baseline"),
    ],
}


def evaluate(kind: str, check: CheckReport | None = None, run: RunReport | None = None,
             baselines: bool = False, load: LoadReport | None = None) -> ChecklistReport:
    items = []
    for step, (text, decide, command) in enumerate(ITEMS[kind], 1):
        status, why, evidence = decide(check, run, baselines, load)
        by = ""
        if status in (Status.passed, Status.failed):
            if command == "run" and run is None and load is not None:
                command = "load"
            by = {"check": "gputriage check", "run": f"gputriage show {run.id}" if run and run.id else "gputriage run",
                  "baseline": "gputriage baseline",
                  "load": f"gputriage load --show {load.id}" if load and load.id else "gputriage load"}.get(command, "")
        items.append(Item(step=step, text=text, status=status, why=why, decided_by=by, evidence=evidence))
    return ChecklistReport(kind=kind, items=items)
