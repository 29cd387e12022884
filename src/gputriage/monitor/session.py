"""One monitored session (a `run` or a `watch`): static facts, the sampler feeding the store, and
the verdict and findings at the end."""

from __future__ import annotations

import platform
import socket
import sys
from typing import Any

from gputriage import __version__
from gputriage.backends.host import Host
from gputriage.backends.nvml import NvmlBackend
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, Severity
from gputriage.model.numbers import median
from gputriage.model.reading import Unavailable
from gputriage.model.specs import pcie_link_gbs
from gputriage.monitor import classify
from gputriage.monitor.sampler import DEFAULT_PERIOD_S, Sampler
from gputriage.monitor.store import Store

# verdicts that call for a change, and how loudly; compute_bound and idle are not faults
VERDICT_SEVERITY = {B.compute_bound: Severity.ok, B.idle: Severity.info, B.memory_bound: Severity.info}
LINK_SATURATED = 0.7  # share of the link's capacity above which copies are at the link's limit
IDLE_EDGES_MIN_S = 30.0  # start-up + shut-down worth a finding: this long...
IDLE_EDGES_MIN_SHARE = 0.25  # ...and this share of the run


def _value(reading: Any) -> Any:
    return None if isinstance(reading, Unavailable) else reading


def gpu_static(nvml: NvmlBackend) -> tuple[list[int], dict[int, dict[str, Any]], dict[str, Any]]:
    """The GPUs NVML sees and what does not change during a run."""
    failed = nvml.init()
    if failed is not None:
        return [], {}, {"nvml": str(failed)}
    count = _value(nvml.call("nvmlDeviceGetCount")) or 0
    info: dict[int, dict[str, Any]] = {}
    for i in range(count):
        mem = _value(nvml.call("nvmlDeviceGetMemoryInfo", i)) or {}
        info[i] = {
            "name": _value(nvml.call("nvmlDeviceGetName", i)),
            "uuid": _value(nvml.call("nvmlDeviceGetUUID", i)),
            "memory_total_bytes": mem.get("total"),
            "power_limit_mw": _value(nvml.call("nvmlDeviceGetEnforcedPowerLimit", i)),
            "power_default_mw": _value(nvml.call("nvmlDeviceGetPowerManagementDefaultLimit", i)),
            "sm_max_mhz": _value(nvml.call("nvmlDeviceGetMaxClockInfo", i, 1)),
            "pcie_gen_max": _value(nvml.call("nvmlDeviceGetMaxPcieLinkGeneration", i)),
            "pcie_width_max": _value(nvml.call("nvmlDeviceGetMaxPcieLinkWidth", i)),
        }
    system = {"driver": _value(nvml.call("nvmlSystemGetDriverVersion")),
              "cuda_driver": _value(nvml.call("nvmlSystemGetCudaDriverVersion_v2"))}
    return list(range(count)), info, system


def meta(command: list[str], gpus: dict[int, dict[str, Any]], system: dict[str, Any], host: Host,
         period_s: float) -> dict[str, Any]:
    env = {k: host.environ[k] for k in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF",
                                        "OMP_NUM_THREADS", "CUDA_LAUNCH_BLOCKING") if k in host.environ}
    return {"hostname": socket.gethostname(), "gputriage": __version__, "python": sys.version.split()[0],
            "platform": platform.platform(), "cwd": host.cwd, "command": command, "period_s": period_s,
            "gpus": {str(k): v for k, v in gpus.items()}, "system": system, "env": env}


def gpus_of_workload(samples: list[dict[str, Any]], gpus: list[int]) -> list[int]:
    """GPUs the workload used: where it held memory or where activity rose; else all."""
    if not samples:
        return gpus
    used = []
    for i in gpus:
        rows = [classify.gpu_row(s, i) for s in samples]
        base = rows[0].get("used") or 0
        if any(classify.computes(g) or (g.get("used") or 0) > base + classify.WORKLOAD_VRAM_BYTES for g in rows):
            used.append(i)
    return used or gpus[:1]


def _link_saturated(v: dict[str, Any], gpu: dict[str, Any]) -> bool:
    rx = v.get("evidence", {}).get("pcie_rx_mbps")
    gen, width = gpu.get("pcie_gen_max"), gpu.get("pcie_width_max")
    if not rx or not gen or not width:
        return False
    return rx / 1000.0 >= LINK_SATURATED * pcie_link_gbs(gen, width)


def run_findings(verdicts: dict[int, dict[str, Any]], samples: list[dict[str, Any]],
                 info: dict[int, dict[str, Any]] | None = None, workload: bool = True) -> list[Finding]:
    """The findings of a session; `workload`: a `run` (its GPU idle before and after its work is its own)."""
    out: list[Finding] = []
    info = info or {}
    for i, v in verdicts.items():
        name = v.get("bottleneck")
        if not name:
            continue
        b = B(name)
        sev = VERDICT_SEVERITY.get(b, Severity.warn)
        if b == B.h2d_copy_bound and _link_saturated(v, info.get(i, {})):
            sev = Severity.info
            v = dict(v, summary=v["summary"] + " — at the PCIe link's capacity", decision=(
                "Copies already run at the link's speed: send fewer bytes (uint8/bf16 on the wire, decode on the "
                "GPU), overlap them with compute, or keep data resident on the GPU"))
        undecided = v.get("undecided_between") or []
        cause = v["summary"]
        decision = v["decision"]
        if undecided:
            cause += f" — the sampler cannot tell {' from '.join(undecided)} apart"
            decision += "; run again with `gputriage run --profile` to separate them"
        out.append(Finding(id=f"run.{name}", severity=sev, step=2 if b not in (B.input_starved, B.vram_pressure) else
                           (4 if b == B.input_starved else 3), symptom=f"GPU {i}: {name.replace('_', ' ')} "
                           f"({v['share']:.0%} of steady time)", cause=cause, decision=decision,
                           evidence=v.get("evidence", {}), subject=f"gpu.{i}"))
        edges = _idle_edges(i, v, samples) if workload else None
        if edges is not None:
            out.append(edges)
    hosts = [s.get("host", {}) for s in samples]
    swapin = [h.get("swapin_s", 0) or 0 for h in hosts]
    if swapin and max(swapin) > 10:
        out.append(Finding(id="run.host_swapping", severity=Severity.warn, step=4,
                           symptom="The host swapped pages back in during the run",
                           cause="Host memory is short: the workload and its loaders page instead of feeding the GPU",
                           decision="Lower host memory use (fewer/lighter DataLoader workers, smaller prefetch) or add RAM",
                           evidence={"max_swapin_pages_s": max(swapin), "samples_swapping": sum(1 for x in swapin if x > 0)},
                           subject="host"))
    iowait = [h["iowait"] for h in hosts if "iowait" in h]
    if iowait and median(iowait) >= classify.IOWAIT_PCT:
        out.append(Finding(id="run.host_iowait", severity=Severity.warn, step=4,
                           symptom="CPUs waited on I/O during the run",
                           cause="Storage or a network filesystem cannot feed the input pipeline",
                           decision="Use local NVMe, sharded sequential formats, caching; measure with `gputriage bench`",
                           evidence={"median_iowait_pct": median(iowait)}, subject="host"))
    return out


def _idle_edges(gpu: int, v: dict[str, Any], samples: list[dict[str, Any]]) -> Finding | None:
    """Time the GPU is held but not yet, or no longer, used: before its first kernel, after its last."""
    start, end = v.get("startup_s") or 0.0, v.get("shutdown_s") or 0.0
    run_s = samples[-1]["t"] - samples[0]["t"] if len(samples) > 1 else 0.0
    if run_s <= 0 or start + end < IDLE_EDGES_MIN_S or (start + end) / run_s < IDLE_EDGES_MIN_SHARE:
        return None
    return Finding(id="run.idle_edges", severity=Severity.info, step=2, subject=f"gpu.{gpu}",
                   symptom=f"GPU {gpu} held but idle {(start + end) / run_s:.0%} of the run: {start:.0f} s before "
                           f"its first kernel, {end:.0f} s after its last",
                   cause="Imports, data and model loading, compilation before the work; saving, joining workers "
                         "and tearing down after it: the GPU is paid for and idle",
                   decision="Load once and keep the process (a long-lived worker or server), keep torch.compile's "
                            "cache between runs (TORCHINDUCTOR_CACHE_DIR), load weights straight to the GPU, "
                            "checkpoint asynchronously; profile the start-up on the host (py-spy, pyinstrument)",
                   evidence={"startup_s": start, "shutdown_s": end, "run_s": round(run_s, 1)})


class Session:
    """Sampler → store; at the end, verdicts and findings."""

    def __init__(self, nvml: NvmlBackend, host: Host, store: Store | None, kind: str, command: list[str],
                 period_s: float = DEFAULT_PERIOD_S, use_gpm: bool = True) -> None:
        self.nvml, self.host, self.store = nvml, host, store
        self.gpus, self.info, self.system = gpu_static(nvml)
        self.meta = meta(command, self.info, self.system, host, period_s)
        self.kind, self.command = kind, command
        self.run_id: int | None = None
        self.sampler = Sampler(nvml, host, self.gpus, period_s=period_s, sink=self._sink, use_gpm=use_gpm)

    def _sink(self, batch: list[dict[str, Any]]) -> None:
        if self.store is not None and self.run_id is not None:
            self.store.add_samples(self.run_id, batch)

    def start(self, pid: int | None = None) -> None:
        """Record the run in the store and start sampling (the workload's process tree if `pid`)."""
        if self.store is not None:
            self.run_id = self.store.begin_run(self.kind, self.command, self.meta)
        if pid is not None:
            self.sampler.pid = pid
        self.sampler.start()

    def finish(self, exit_code: int | None, extra: list[Finding] | None = None,
               trace: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[Finding]]:
        """Stop sampling; judge each GPU the workload used; merge a profiler trace's verdict if any;
        keep it all in the store. Returns the verdict ({"bottleneck", "source", "per_gpu", ...})."""
        samples = self.sampler.stop()
        held = (trace or {}).get("profiler_held_s")
        # the seconds the profiler itself held the workload (start-up drain, export) are not the workload's
        judged = [s for s in samples if not (held[0] <= s["t"] <= held[1])] if held else samples
        verdicts = {i: classify.verdict(judged, i, self.info.get(i, {})) for i in gpus_of_workload(samples, self.gpus)}
        extra = list(extra or [])
        verdict: dict[str, Any] = {"bottleneck": dominant(verdicts), "source": "sampler",
                                   "per_gpu": {str(k): v for k, v in verdicts.items()}}
        if trace is not None:
            from gputriage.trace.merge import HOST_BOUND, merge

            first = next(iter(verdicts.items()), None)
            effect = (profiler_effect(samples, first[0], first[1], trace.get("profile_window_s"), held)
                      if first else None)
            merged = merge(first[1] if first else None, trace.get("verdict"), effect)
            verdict.update(bottleneck=merged["bottleneck"], source=merged["source"], merged=merged)
            if effect:
                verdict["profiler_effect"] = effect
            if merged.get("profiler_starved"):  # the trace's host-side idle is the profiler's own
                host_side = {f"trace.{b}" for b in HOST_BOUND}
                why = f"{merged['profiler_note']}: this idle is its own overhead"
                extra = [_as_profiler_artefact(f, why) if f.id in host_side else f for f in extra]
        findings = run_findings(verdicts, samples, self.info, workload=self.kind == "run") + extra
        if self.store is not None and self.run_id is not None:
            self.store.end_run(self.run_id, exit_code, verdict, [f.to_json() for f in findings])
        self.nvml.shutdown()
        return verdict, findings


def _as_profiler_artefact(f: Finding, why: str) -> Finding:
    """A trace finding that describes the profiler's own overhead: kept, as information."""
    return Finding(id=f.id, severity=Severity.info, step=f.step, symptom=f.symptom + " (while profiled)",
                   cause=f"{f.cause}; but {why}", decision=f.decision, evidence=f.evidence, subject=f.subject)


def profiler_effect(samples: list[dict[str, Any]], gpu: int, judged: dict[str, Any],
                    window_s: list[float] | None, held_s: list[float] | None = None) -> dict[str, float] | None:
    """Median GPU-Util while the profiler ran and over the rest of the steady run (start-up and
    shut-down left out), outside the time the profiler held the workload (None when either has
    fewer than 3 samples)."""
    if not window_s or not samples:
        return None
    t0, t1 = window_s
    h0, h1 = held_s or window_s
    steady_from = samples[0]["t"] + (judged.get("startup_s") or 0.0)
    judged_end = max((s["t"] for s in samples if not (held_s and h0 <= s["t"] <= h1)), default=samples[-1]["t"])
    steady_to = judged_end - (judged.get("shutdown_s") or 0.0)  # `judged` was measured without the held time
    inside, outside = [], []
    for s in samples:
        util = classify.gpu_row(s, gpu).get("util")
        if util is None or not steady_from <= s["t"] <= steady_to:
            continue
        if t0 <= s["t"] <= t1:
            inside.append(util)
        elif not h0 <= s["t"] <= h1:
            outside.append(util)
    if len(inside) < 3 or len(outside) < 3:
        return None
    return {"inside_pct": float(median(inside)), "outside_pct": float(median(outside))}


def dominant(verdicts: dict[int, dict[str, Any]]) -> str | None:
    """The bottleneck most GPUs share."""
    names = [v.get("bottleneck") for v in verdicts.values() if v.get("bottleneck")]
    return max(set(names), key=names.count) if names else None
