"""The playbook's three checklists, automated where a measurement decides an item.

- box (a sane GPU machine): from `check`'s findings and facts — the power supply (hardware slowdown,
  a GPU fallen off the bus), cooling (thermal slowdown or violation time), storage (a slow filesystem,
  its reads measured by `--full`), the driver (missing, mismatched, NVRM errors, Xid events), the chain
  NVML → container → framework; VRAM for the target model and locked versions are for the person.
- inference (stable on one GPU): from a run or a load test — VRAM at its peak under the nearly-full
  threshold; from a load test — p99 within the SLO at some load (the knee), no server error or dropped
  stream under load; request caps, batching and quantization are for the person.
- training (reliable on one GPU): from a run — tensor cores in use (no tensor_cores_idle; tensor pipes
  busy), memory under control (no vram_pressure, peak under the pressure threshold), boring I/O (no
  input_starved, no iowait), a baseline kept (`gputriage baseline save`, or the run compared with one).
An item passes only on what was measured: a check whose facts are unavailable (no driver, no GPU, an
unreadable kernel log, no read probe) or a run that sampled no GPU leaves it unknown, never passed. A
failed item names the findings that failed it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gputriage.diagnosis.thresholds import TENSOR_BUSY, VRAM_NEARLY_FULL, VRAM_PRESSURE
from gputriage.model.check import CheckReport
from gputriage.model.checklist import ChecklistReport, Item, Status
from gputriage.model.load import LoadReport
from gputriage.model.run import RunReport

KINDS = ("box", "training", "inference")
READ_FACTS = ("host.fs.cwd.seq_read_mbps", "host.fs.cwd.rand_read_4k_iops")  # `check --full`'s read probe

Verdict = tuple[Status, str, dict[str, Any]]


@dataclass(frozen=True)
class Given:
    """What an item is decided from: a check of the machine, a stored run, whether a baseline is kept, a load
    test."""

    check: CheckReport | None = None
    run: RunReport | None = None
    baselines: bool = False
    load: LoadReport | None = None


Decider = Callable[[Given], Verdict]


def _unread(check: CheckReport, name: str) -> str | None:
    """Why a fact of the check was not measured (None: it was)."""
    if name not in check.facts:
        return "not read"
    value = check.facts[name]
    if isinstance(value, dict) and isinstance(value.get("unavailable"), dict):
        why = value["unavailable"]
        return f"{why.get('reason', 'unavailable')}: {why.get('detail', '')}".rstrip(": ")
    return None


def _gpus(check: CheckReport) -> list[int]:
    count = check.facts.get("gpu.count")
    return list(range(count)) if isinstance(count, int) and count > 0 else []


def _no_gpu(check: CheckReport) -> str:
    why = _unread(check, "gpu.count")
    return f"no GPU was read ({why})" if why else "NVML sees no GPU"


def _missing(check: CheckReport, per_gpu: tuple[str, ...] = (), host: tuple[str, ...] = ()) -> list[str]:
    """The facts an item rests on that the check could not measure, each with why."""
    names = [f"gpu.{i}.{n}" for i in _gpus(check) for n in per_gpu] + list(host)
    return [f"{n} ({why})" for n in names if (why := _unread(check, n)) is not None]


def _by_findings(
    check: CheckReport | None,
    ids: tuple[str, ...],
    clean: str,
    *,
    per_gpu: tuple[str, ...] = (),
    host: tuple[str, ...] = (),
    needs_gpu: bool = False,
) -> Verdict:
    """Failed by any of `ids`; passed only when the facts the item rests on were measured, else unknown."""
    if check is None:
        return Status.unknown, "needs `gputriage check` (or --from SNAPSHOT)", {}
    hit = [f.id for f in check.findings if f.id in ids]
    if hit:
        return Status.failed, "check found: " + ", ".join(dict.fromkeys(hit)), {"findings": hit}
    if needs_gpu and not _gpus(check):
        return Status.unknown, f"not measured: {_no_gpu(check)}", {}
    missing = _missing(check, per_gpu, host)
    if missing:
        return Status.unknown, "not measured: " + "; ".join(missing), {"unmeasured": missing}
    return Status.passed, clean, {"looked_for": list(ids)}


def _question(why: str) -> Decider:
    def ask(_given: Given) -> Verdict:
        return Status.question, why, {}

    return ask


def _power(g: Given) -> Verdict:
    return _by_findings(
        g.check,
        ("clocks.hw_slowdown", "pcie.fallen_off_bus", "gpu.lost"),
        "no hardware slowdown and no GPU fallen off the bus",
        per_gpu=("clock.event_reasons",),
        host=("kernel.fallen_off_bus",),
        needs_gpu=True,
    )


def _cooling(g: Given) -> Verdict:
    return _by_findings(
        g.check,
        ("clocks.thermal_slowdown", "thermal.violation_time", "thermal.near_slowdown"),
        "no thermal slowdown, no time spent over the thermal limit, not near it",
        per_gpu=("clock.event_reasons", "temperature_c"),
        needs_gpu=True,
    )


def _storage(g: Given) -> Verdict:
    verdict = _by_findings(
        g.check,
        ("fs.slow_type", "fs.slow_reads", "fs.low_space"),
        "the working directory's filesystem is local, reads fast and has room",
        host=("host.fs.cwd.fstype", "host.fs.cwd.free_bytes", *READ_FACTS),
    )
    unmeasured = verdict[2].get("unmeasured", [])
    if unmeasured and all(u.split(" ")[0] in READ_FACTS for u in unmeasured):
        return (
            Status.unknown,
            "its read speed was not measured: `gputriage checklist box --full` measures it",
            verdict[2],
        )
    return verdict


def _driver(g: Given) -> Verdict:
    return _by_findings(
        g.check,
        ("driver.missing", "driver.version_mismatch", "kernel.nvrm_errors", "xid.event"),
        "the driver loads, matches its library, and logged no NVRM error or Xid",
        host=("driver.version", "kernel.nvrm_errors", "kernel.xid_events"),
    )


def _chain(g: Given) -> Verdict:
    return _by_findings(
        g.check,
        (
            "driver.missing",
            "container.no_gpu_devices",
            "env.gpus_hidden",
            "env.visible_devices_cut_short",
            "torch.cuda_unavailable",
            "torch.cpu_build",
            "torch.arch_missing",
            "torch.cuda_newer_than_driver",
        ),
        "NVML sees the GPUs, the container passes them through, the framework uses them",
        host=("torch.cuda.available",),
        needs_gpu=True,
    )


def _vram_peak_pct(run: RunReport) -> float | None:
    peaks = []
    for key, v in run.verdict.per_gpu.items():
        static = run.meta.gpus.get(key)
        total = static.memory_total_bytes if static else None
        used = v.evidence.get("used_max_bytes")
        if total and isinstance(used, (int, float)):
            peaks.append(100 * used / total)
    return round(max(peaks), 1) if peaks else None


def _load_vram_peak_pct(load: LoadReport) -> float | None:
    peaks = [
        100 * g.used_max_bytes / g.total_bytes for s in load.steps for g in s.gpus if g.used_max_bytes and g.total_bytes
    ]
    return round(max(peaks), 1) if peaks else None


def _run_name(run: RunReport) -> str:
    return f"run {run.id}" if run.id is not None else "the run"


def _no_gpu_in(run: RunReport) -> str | None:
    """Why a run's GPU items cannot be decided (None: it sampled a GPU)."""
    return None if run.verdict.per_gpu else f"not measured: {_run_name(run)} sampled no GPU"


def _run_ids(run: RunReport) -> set[str]:
    """The run's finding ids and its verdicts' (stated in the verdict, not among the findings)."""
    return {f.id for f in run.findings} | {v.finding for v in run.verdict.per_gpu.values() if v.finding}


def _vram_budget(g: Given) -> Verdict:
    if g.run is None and g.load is None:
        return Status.unknown, "needs a run or a load test under load (--run ID, --load ID)", {}
    peak = _vram_peak_pct(g.run) if g.run is not None else None
    if peak is None and g.load is not None:
        peak = _load_vram_peak_pct(g.load)
    if peak is None:
        given = ([_run_name(g.run)] if g.run else []) + (["the load test"] if g.load else [])
        return Status.unknown, f"not measured: {' and '.join(given)} saw no GPU memory in use", {}
    limit = VRAM_NEARLY_FULL.value
    ok = peak < limit
    return (
        Status.passed if ok else Status.failed,
        f"VRAM peaked at {peak}% of the GPU's ({'under' if ok else 'at or over'} {limit:.0f}%)",
        {"vram_peak_pct": peak},
    )


def _tail(g: Given) -> Verdict:
    load = g.load
    if load is None:
        return Status.unknown, "needs a load test (gputriage load URL --slo ... --slo-percentile 99; --load ID)", {}
    slo = load.meta.slo
    if slo is None:
        return Status.unknown, "the load test had no SLO: give --slo (e.g. ttft=500ms,tpot=50ms)", {}
    met = [s for s in load.steps if s.meets_slo]
    at = lambda s: s.concurrency if s.concurrency is not None else s.rate_per_s
    if not met:
        return Status.failed, f"no step met the SLO at p{slo.percentile}, the lightest load included", {}
    top = met[-1]
    return (
        Status.passed,
        f"p{slo.percentile} within the SLO up to a load of {at(top):g}",
        {"knee": at(top), "ttft_p99_ms": top.ttft.p99_ms, "tpot_p99_ms": top.tpot.p99_ms},
    )


def _no_failures(g: Given) -> Verdict:
    load = g.load
    if load is None:
        return Status.unknown, "needs a load test (--load ID)", {}
    if not load.steps:
        return Status.unknown, "not measured: the load test finished no step", {}
    errors: dict[str, int] = {}
    for s in load.steps:
        for k, n in s.errors.items():
            errors[k] = errors.get(k, 0) + n
    bad = {k: n for k, n in errors.items() if k.startswith("http_5") or k in ("connect", "stream")}
    if bad:
        return (
            Status.failed,
            "the server failed or dropped requests under load: " + ", ".join(f"{k} x{n}" for k, n in bad.items()),
            {"errors": bad},
        )
    return Status.passed, f"{sum(s.requests for s in load.steps)} requests, no server error or dropped stream", {}


def _precision(g: Given) -> Verdict:
    run = g.run
    if run is None:
        return Status.unknown, "needs a run (--run ID)", {}
    idle = _run_ids(run) & {"run.tensor_cores_idle", "trace.tensor_cores_idle"}
    if idle:
        return Status.failed, "matrix math ran on CUDA cores: " + ", ".join(sorted(idle)), {"findings": sorted(idle)}
    if (why := _no_gpu_in(run)) is not None:
        return Status.unknown, why, {}
    tensor = [v.evidence.get("tensor_active_pct") for v in run.verdict.per_gpu.values()]
    busy = [t for t in tensor if isinstance(t, (int, float))]
    if busy and max(busy) >= TENSOR_BUSY.value:
        return Status.passed, f"tensor pipes {max(busy):.0f}% active", {"tensor_active_pct": max(busy)}
    return Status.unknown, "tensor-core use not seen either way (no GPM, or little matrix math)", {}


def _memory(g: Given) -> Verdict:
    run = g.run
    if run is None:
        return Status.unknown, "needs a run (--run ID)", {}
    peak = _vram_peak_pct(run)
    pressed = "run.vram_pressure" in _run_ids(run)
    if pressed or (peak is not None and peak >= VRAM_PRESSURE.value):
        said = f" (peak {peak}%)" if peak is not None else ""
        return Status.failed, f"VRAM under pressure{said}", {"vram_peak_pct": peak}
    if peak is None:
        return Status.unknown, _no_gpu_in(run) or f"not measured: {_run_name(run)} gave no VRAM peak", {}
    return Status.passed, f"no VRAM pressure (peak {peak}%)", {"vram_peak_pct": peak}


def _io(g: Given) -> Verdict:
    run = g.run
    if run is None:
        return Status.unknown, "needs a run (--run ID)", {}
    hit = _run_ids(run) & {"run.input_starved", "trace.input_starved", "run.host_iowait"}
    if hit:
        return Status.failed, "the GPU waited on input: " + ", ".join(sorted(hit)), {"findings": sorted(hit)}
    if (why := _no_gpu_in(run)) is not None:  # starvation is the GPU waiting: unseen without one
        return Status.unknown, why, {}
    if run.host.iowait_pct is None:
        return Status.unknown, f"not measured: {_run_name(run)} read no iowait", {}
    return Status.passed, "no input starvation and no iowait in the run", {"iowait_pct": run.host.iowait_pct}


def _baseline(g: Given) -> Verdict:
    if g.baselines or (g.run is not None and g.run.baseline is not None):
        return Status.passed, "a baseline is kept in the store", {}
    return Status.failed, "no baseline: `gputriage baseline save NAME RUN...` after a known-good run", {}


ITEMS: dict[str, list[tuple[str, Decider, str]]] = {
    "box": [
        (
            "Choose the GPU by VRAM first: if the target model just fits, it does not fit",
            _question("how much VRAM the target model needs is yours to say (the GPUs' VRAM is in `gputriage check`)"),
            "",
        ),
        ("A power supply that holds its transients: stability beats the theoretical peak", _power, "check"),
        ("Cooling is not optional: hot GPUs throttle, throttled GPUs lie about performance", _cooling, "check"),
        ("NVMe for datasets and checkpoints (it will not fix CPU preprocessing)", _storage, "check"),
        ("A known-good driver branch, not updated lightly near production", _driver, "check"),
        ("The chain end to end: nvidia-smi, the container's GPU pass-through, the framework's GPU", _chain, "check"),
        ("Versions locked (pip freeze or a lock file)", _question("whether versions are locked is yours to say"), ""),
    ],
    "inference": [
        (
            f"A VRAM budget with headroom for peaks: {VRAM_NEARLY_FULL.value:.0f}-{VRAM_PRESSURE.value:.0f}% used is "
            "dangerously full",
            _vram_budget,
            "run",
        ),
        (
            "Request sizes bounded: a context length and an output-token cap",
            _question("the server's caps are yours to say (`gputriage load` shows where latency breaks)"),
            "",
        ),
        ("Batching deliberate: unbounded dynamic batching can blow up VRAM", _question("yours to say"), ""),
        ("Quantization tested on long contexts and edge cases", _question("yours to say"), ""),
        ("Tail metrics watched (p95/p99) and correlated with VRAM and sequence length", _tail, "load"),
        ("No OOM and no restart under load: the server answers every request", _no_failures, "load"),
    ],
    "training": [
        (
            "A tiny run first: the loss falls, checkpoints are written, the data loader does not hang",
            _question("yours to say"),
            "",
        ),
        ("Mixed precision used properly (tensor cores, not CUDA cores)", _precision, "run"),
        ("Memory under control: batch size, gradient accumulation, checkpointing", _memory, "run"),
        ("Boring I/O: datasets on fast local storage, few small files, pre-tokenized", _io, "run"),
        (
            "Baselines captured: samples/s or tokens/s on a known sample, re-run after each change",
            _baseline,
            "baseline",
        ),
    ],
}


def _decided_by(command: str, g: Given) -> str:
    if command == "run" and g.run is None and g.load is not None:
        command = "load"
    run, load = g.run, g.load
    return {
        "check": "gputriage check",
        "run": f"gputriage show {run.id}" if run and run.id else "gputriage run",
        "baseline": "gputriage baseline",
        "load": f"gputriage load --show {load.id}" if load and load.id else "gputriage load",
    }.get(command, "")


def evaluate(
    kind: str,
    check: CheckReport | None = None,
    run: RunReport | None = None,
    baselines: bool = False,
    load: LoadReport | None = None,
) -> ChecklistReport:
    given = Given(check=check, run=run, baselines=baselines, load=load)
    items = []
    for step, (text, decide, command) in enumerate(ITEMS[kind], 1):
        status, why, evidence = decide(given)
        by = _decided_by(command, given) if status in (Status.passed, Status.failed) else ""
        items.append(Item(step=step, text=text, status=status, why=why, decided_by=by, evidence=evidence))
    return ChecklistReport(kind=kind, items=items)
