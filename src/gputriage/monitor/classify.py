"""Name a workload's bottleneck from sampled time series (the sampler's verdict).

Samples are cut into windows (1 s by default); each window gets one label from the Bottleneck
vocabulary by the rules below, evaluated in order; consecutive windows with the same label form
a regime. The dominant bottleneck is the label of most steady-state time. Thresholds are module
constants, so they are documented where they are used.

What each label rests on (GPM = NVML GPU Performance Monitoring, Hopper and newer):
- idle: GPU-Util < 5% and SM activity < 5%, and the workload's CPU < 20% of a core (without
  process data: GPU-Util < 1%).
- contended: another process has memory on the same GPU while it is busy.
- vram_pressure: memory used >= 95% of the GPU's total.
- throttled: a thermal or hardware slowdown reason in >= 30% of the window's samples, or the
  power cap active at a limit lowered below the default.
- h2d_copy_bound: GPU mostly idle (SM < 30%) while PCIe RX >= 2 GB/s.
- underfilled: GPU-Util >= 90% but SM activity < 50%: a kernel always runs, but it covers few SMs.
- The GPU idles a quarter of the time or more (GPU-Util < 75%): the host does not keep it fed.
  Which host-side cause, from what the counters can tell apart:
  - input_starved, certain, when iowait >= 10%.
  - launch_bound: one workload thread >= 85% busy and, while a kernel runs, it covers under half
    the SMs (SM activity < 0.5 x GPU-Util): kernels too short to cover their launch. The host is
    busy launching them; an input pipeline or a sync remain possible.
  Otherwise (kernels that fill the GPU while they run, or no busy thread):
  - input_starved when the workload reads >= 20 MB/s (files, pipes, sockets: it loads input while
    the GPU waits), or, without such reads, when GPU-Util < 30%;
  - sync_bound else: host work that a synchronization keeps from overlapping the GPU's.
  The last two look alike on every counter (a thread spinning in a sync is as busy as one decoding
  data), so each names the other as possible; `run --profile` tells them apart. Without GPM
  (no SM activity), kernel size is unknown and launch_bound stays possible too.
- compute_bound: SM activity >= 50% and tensor-pipe activity >= 30% (healthy on tensor cores).
- memory_bound: SM activity >= 50% and DRAM bandwidth >= 60% of peak.
- tensor_cores_idle: SM activity >= 60%, tensor pipes < 5%, DRAM < 60%: math on CUDA cores.
- compute_bound (CUDA cores): SM activity >= 50% otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gputriage.model.bottleneck import DECISIONS, Bottleneck as B
from gputriage.model.numbers import median

WINDOW_S = 1.0
IDLE_UTIL_PCT = 5.0
IDLE_SM_PCT = 5.0
IDLE_PROC_CPU_PCT = 20.0
VRAM_PRESSURE_PCT = 95.0
THROTTLE_SHARE = 0.3
GPU_MOSTLY_IDLE_UTIL_PCT = 30.0
SM_IDLE_PCT = 30.0
PCIE_RX_BUSY_MBPS = 2000.0
HOT_THREAD_PCT = 85.0
IOWAIT_PCT = 10.0
UTIL_FULL_PCT = 90.0
HOST_BOUND_UTIL_PCT = 75.0
SM_LOW_PCT = 50.0
TENSOR_BUSY_PCT = 30.0
TENSOR_IDLE_PCT = 5.0
DRAM_BUSY_PCT = 60.0
SM_BUSY_PCT = 60.0
SMALL_KERNEL_SM_PER_UTIL = 0.5  # SM activity / GPU-Util below this: running kernels cover under half the SMs
INPUT_READ_MBPS = 20.0  # the workload's reads (rchar) that say it loads input while the GPU waits

THERMAL_OR_HW_BITS = 0x8 | 0x20 | 0x40 | 0x80
POWER_CAP_BIT = 0x4

GPM_GRAPHICS, GPM_SM, GPM_OCC, GPM_TENSOR, GPM_DRAM, GPM_PCIE_TX, GPM_PCIE_RX = "1", "2", "3", "5", "10", "20", "21"


@dataclass
class Window:
    start_s: float
    end_s: float
    label: B
    metrics: dict[str, float]
    alternatives: list[B] = field(default_factory=list)


def _median(values: list[Any]) -> float | None:
    vals = [float(v) for v in values if v is not None]
    return median(vals) if vals else None


def gpu_row(sample: dict[str, Any], gpu: int) -> dict[str, Any]:
    """One GPU's part of a sample ({} when the sample has none)."""
    return next((x for x in sample.get("gpus", []) if x.get("index", 0) == gpu), {})


def computes(row: dict[str, Any]) -> bool:
    """The GPU ran work in this sample (GPU-Util or SM activity above idle)."""
    return (row.get("util") or 0) >= IDLE_UTIL_PCT or (row.get("gpm", {}).get(GPM_SM) or 0) >= IDLE_SM_PCT


WORKLOAD_VRAM_BYTES = 256 * 2**20  # memory growth that says a workload holds the GPU


def window_metrics(rows: list[dict[str, Any]], gpu: int) -> dict[str, Any]:
    g = [gpu_row(r, gpu) for r in rows]
    gpm = lambda k: _median([x.get("gpm", {}).get(k) for x in g])  # noqa: E731
    hosts = [r.get("host", {}) for r in rows]
    procs = [r.get("proc", {}) for r in rows]
    reasons = [x.get("reasons") for x in g if x.get("reasons") is not None]
    read_bps = _median([p.get("io_rchar_bps") for p in procs])
    m: dict[str, Any] = {
        "util_pct": _median([x.get("util") for x in g]),
        "mem_util_pct": _median([x.get("memutil") for x in g]),
        "sm_active_pct": gpm(GPM_SM), "sm_occupancy_pct": gpm(GPM_OCC), "tensor_active_pct": gpm(GPM_TENSOR),
        "dram_bw_pct": gpm(GPM_DRAM), "pcie_rx_mbps": gpm(GPM_PCIE_RX), "pcie_tx_mbps": gpm(GPM_PCIE_TX),
        "power_w": (_median([x.get("power") for x in g]) or 0) / 1000 or None,
        "sm_clock_mhz": _median([x.get("sm_clk") for x in g]),
        "temp_c": _median([x.get("temp") for x in g]),
        "used_bytes": _median([x.get("used") for x in g]),
        "throttle_share": (sum(1 for r in reasons if r & THERMAL_OR_HW_BITS) / len(reasons)) if reasons else None,
        "power_cap_share": (sum(1 for r in reasons if r & POWER_CAP_BIT) / len(reasons)) if reasons else None,
        "max_core_pct": _median([max(h["cpu"]) if h.get("cpu") else None for h in hosts]),
        "iowait_pct": _median([h.get("iowait") for h in hosts]),
        "swapin_pages_s": _median([h.get("swapin_s") for h in hosts]),
        "proc_cpu_pct": _median([p.get("cpu_pct") for p in procs]),
        "read_mbps": read_bps / 1e6 if read_bps is not None else None,
        "top_thread_pct": _median([p.get("top_thread_pct") for p in procs]),
        "others_on_gpu": max((len([o for o in r.get("others", []) if o.get("gpu") == gpu]) for r in rows), default=0),
    }
    return {k: (round(v, 2) if isinstance(v, float) else v) for k, v in m.items()}


def label(m: dict[str, Any], gpu_info: dict[str, Any]) -> tuple[B, list[B]]:
    util, sm = m["util_pct"], m["sm_active_pct"]
    tensor, dram = m["tensor_active_pct"], m["dram_bw_pct"]
    thread, proc_cpu = m["top_thread_pct"] or 0.0, m["proc_cpu_pct"]
    total = gpu_info.get("memory_total_bytes")
    busy_util = util if util is not None else 0.0
    sm_known = sm is not None
    sm_v = sm if sm_known else busy_util  # without GPM, GPU-Util is all there is
    if busy_util < IDLE_UTIL_PCT and sm_v < IDLE_SM_PCT and (proc_cpu is None or proc_cpu < IDLE_PROC_CPU_PCT) \
            and (m["pcie_rx_mbps"] or 0) < PCIE_RX_BUSY_MBPS and (proc_cpu is not None or busy_util < 1.0):
        return B.idle, []
    if m["others_on_gpu"] and busy_util >= IDLE_UTIL_PCT:
        return B.contended, []
    if total and m["used_bytes"] and 100.0 * m["used_bytes"] / total >= VRAM_PRESSURE_PCT:
        return B.vram_pressure, []
    if (m["throttle_share"] or 0) >= THROTTLE_SHARE:
        return B.throttled, []
    limit, default = gpu_info.get("power_limit_mw"), gpu_info.get("power_default_mw")
    if (m["power_cap_share"] or 0) >= THROTTLE_SHARE and limit and default and limit < 0.9 * default:
        return B.throttled, []
    if sm_v < SM_IDLE_PCT and (m["pcie_rx_mbps"] or 0) >= PCIE_RX_BUSY_MBPS:
        return B.h2d_copy_bound, []
    if sm_known and sm_v < SM_LOW_PCT and busy_util >= UTIL_FULL_PCT:
        return B.underfilled, []
    if busy_util < HOST_BOUND_UTIL_PCT:
        return _host_side(m, busy_util, sm if sm_known else None, thread)
    if not sm_known:
        if (m["mem_util_pct"] or 0) >= DRAM_BUSY_PCT:
            return B.memory_bound, []
        return B.compute_bound, [B.underfilled, B.memory_bound]
    if tensor is not None and tensor >= TENSOR_BUSY_PCT:
        return B.compute_bound, []
    if dram is not None and dram >= DRAM_BUSY_PCT:
        return B.memory_bound, []
    if tensor is not None and tensor < TENSOR_IDLE_PCT and sm_v >= SM_BUSY_PCT:
        return B.tensor_cores_idle, []
    return B.compute_bound, []


def _host_side(m: dict[str, Any], util: float, sm: float | None, thread: float) -> tuple[B, list[B]]:
    """The GPU idles a quarter of the time or more: which host-side cause (see the module doc)."""
    if (m["iowait_pct"] or 0) >= IOWAIT_PCT:
        return B.input_starved, []
    hot = thread >= HOT_THREAD_PCT
    if sm is None:  # no GPM: kernel size unknown
        if util < GPU_MOSTLY_IDLE_UTIL_PCT:
            return B.input_starved, [B.launch_bound, B.sync_bound] if hot else [B.sync_bound]
        return B.sync_bound, [B.launch_bound, B.input_starved]
    if hot and sm < SMALL_KERNEL_SM_PER_UTIL * util:
        return B.launch_bound, [B.input_starved, B.sync_bound]
    if (m.get("read_mbps") or 0) >= INPUT_READ_MBPS or util < GPU_MOSTLY_IDLE_UTIL_PCT:
        return B.input_starved, [B.sync_bound]
    return B.sync_bound, [B.input_starved]


def windows(samples: list[dict[str, Any]], gpu: int, gpu_info: dict[str, Any], window_s: float = WINDOW_S,
            start_t: float | None = None) -> list[Window]:
    if not samples:
        return []
    t0 = samples[0]["t"] if start_t is None else start_t
    out: list[Window] = []
    bucket: list[dict[str, Any]] = []
    edge = t0 + window_s
    for s in samples:
        if s["t"] < t0:
            continue
        if s["t"] >= edge and bucket:
            m = window_metrics(bucket, gpu)
            lab, alt = label(m, gpu_info)
            # ends at its edge: after a gap in the samples (time left out) it does not stretch over the gap
            out.append(Window(bucket[0]["t"] - t0, min(s["t"], edge) - t0, lab, m, alt))
            bucket = []
            while edge <= s["t"]:
                edge += window_s
        bucket.append(s)
    if len(bucket) >= max(2, int(0.5 * window_s / 0.1)):
        m = window_metrics(bucket, gpu)
        lab, alt = label(m, gpu_info)
        out.append(Window(bucket[0]["t"] - t0, bucket[-1]["t"] - t0, lab, m, alt))
    return out


@dataclass
class Regime:
    start_s: float
    end_s: float
    label: str  # a Bottleneck name, or "start-up"

    def to_json(self) -> dict[str, Any]:
        return {"start_s": round(self.start_s, 1), "end_s": round(self.end_s, 1), "regime": self.label}


def regimes(ws: list[Window], startup_end_s: float, shutdown_s: float | None = None) -> list[Regime]:
    out: list[Regime] = []
    if startup_end_s > 0:
        out.append(Regime(0.0, startup_end_s, "start-up"))
    for w in ws:
        if w.end_s <= startup_end_s:
            continue
        if shutdown_s is not None and w.start_s > shutdown_s:
            out.append(Regime(w.start_s, ws[-1].end_s, "shut-down"))
            break
        name = w.label.value
        if out and out[-1].label == name:
            out[-1].end_s = w.end_s
        else:
            out.append(Regime(max(w.start_s, startup_end_s), w.end_s, name))
    # fold one-window blips into the regime before them
    merged: list[Regime] = []
    for r in out:
        edges = ("start-up", "shut-down")
        if merged and r.end_s - r.start_s < 1.5 * WINDOW_S and r.label not in edges and merged[-1].label not in edges:
            merged[-1].end_s = r.end_s
            continue
        if merged and merged[-1].label == r.label:
            merged[-1].end_s = r.end_s
            continue
        merged.append(r)
    return merged


def startup_end(samples: list[dict[str, Any]], gpu: int) -> float:
    """Seconds until the workload first computes on the GPU; in a run whose GPU never computes, until
    its memory first grows. Imports, model building and kernel loading after the CUDA context exists
    are start-up too: a GPU that has not yet run anything is not starved by its input."""
    if not samples:
        return 0.0
    t0 = samples[0]["t"]
    rows = [(s, gpu_row(s, gpu)) for s in samples]
    for s, g in rows:
        if computes(g):
            return s["t"] - t0
    base_used = rows[0][1].get("used", 0) or 0
    for s, g in rows:
        if (g.get("used") or 0) > base_used + WORKLOAD_VRAM_BYTES and s.get("proc", {}).get("vram"):
            return s["t"] - t0
    return 0.0


def shutdown_start(samples: list[dict[str, Any]], gpu: int) -> float | None:
    """Seconds until the workload last computed on the GPU (None if it never did): what follows is
    its shut-down (workers joined, checkpoints written, the interpreter's exit), not its steady state."""
    last = next((s for s in reversed(samples) if computes(gpu_row(s, gpu))), None)
    return None if last is None else last["t"] - samples[0]["t"]


def describe(label_: B, m: dict[str, Any]) -> str:
    def f(key: str, unit: str = "%") -> str:
        v = m.get(key)
        return "n/a" if v is None else f"{v:.0f}{unit}" if isinstance(v, (int, float)) else str(v)

    parts = {
        B.underfilled: f"GPU-Util {f('util_pct')} but SM activity {f('sm_active_pct')}, occupancy {f('sm_occupancy_pct')}",
        B.compute_bound: f"SM activity {f('sm_active_pct')}, tensor pipes {f('tensor_active_pct')}, "
                         f"{f('power_w', ' W')}",
        B.memory_bound: f"DRAM bandwidth {f('dram_bw_pct')} of peak, SM activity {f('sm_active_pct')}, "
                        f"tensor pipes {f('tensor_active_pct')}",
        B.tensor_cores_idle: f"SM activity {f('sm_active_pct')} but tensor pipes {f('tensor_active_pct')}, "
                             f"DRAM {f('dram_bw_pct')}",
        B.input_starved: f"GPU-Util {f('util_pct')}, SM activity {f('sm_active_pct')} while one workload thread "
                         f"runs at {f('top_thread_pct')}, the workload reads {f('read_mbps', ' MB/s')} "
                         f"(iowait {f('iowait_pct')})",
        B.launch_bound: f"GPU-Util {f('util_pct')} but SM activity {f('sm_active_pct')} (short kernels), one host "
                        f"thread at {f('top_thread_pct')}",
        B.sync_bound: f"GPU-Util {f('util_pct')}, SM activity {f('sm_active_pct')}, busiest host thread "
                      f"{f('top_thread_pct')}",
        B.h2d_copy_bound: f"PCIe RX {f('pcie_rx_mbps', ' MB/s')} while SM activity is {f('sm_active_pct')}",
        B.throttled: f"slowdown reasons in {m.get('throttle_share') or 0:.0%} of samples, SM clock "
                     f"{f('sm_clock_mhz', ' MHz')}, {f('temp_c', ' C')}",
        B.vram_pressure: f"{(m.get('used_bytes') or 0) / 2**30:.1f} GiB of VRAM used",
        B.contended: f"{m.get('others_on_gpu')} other process(es) on the GPU, GPU-Util {f('util_pct')}",
        B.idle: f"GPU-Util {f('util_pct')}, SM activity {f('sm_active_pct')}, workload CPU {f('proc_cpu_pct')}",
    }
    return parts.get(label_, "")


def verdict(samples: list[dict[str, Any]], gpu: int, gpu_info: dict[str, Any]) -> dict[str, Any]:
    """The dominant bottleneck of one GPU's steady state, with confidence, evidence and timeline."""
    start, end = startup_end(samples, gpu), shutdown_start(samples, gpu)
    ws = windows(samples, gpu, gpu_info)
    steady = [w for w in ws if w.start_s >= start and (end is None or w.start_s <= end)] or ws
    timeline = [r.to_json() for r in regimes(ws, start, end)]
    if not steady:
        return {"bottleneck": None, "confidence": 0.0, "summary": "too few samples to judge", "timeline": timeline}
    counts: dict[B, float] = {}
    for w in steady:
        counts[w.label] = counts.get(w.label, 0.0) + (w.end_s - w.start_s or WINDOW_S)
    total = sum(counts.values())
    dominant = max(counts, key=lambda k: counts[k])
    chosen = [w for w in steady if w.label == dominant]
    keys = chosen[0].metrics.keys()
    evidence = {k: _median([w.metrics.get(k) for w in chosen]) for k in keys}
    evidence = {k: (round(v, 2) if isinstance(v, float) else v) for k, v in evidence.items() if v is not None}
    timeline = _mark_warmup(timeline, dominant.value)
    alternatives = sorted({a.value for w in chosen for a in w.alternatives})
    share = counts[dominant] / total
    confidence = round(share * (0.6 if alternatives else 1.0), 2)
    summary = f"{describe(dominant, evidence)}: {dominant.value}"
    series = {"t_s": [round(w.start_s, 1) for w in ws], "util_pct": [w.metrics.get("util_pct") for w in ws],
              "sm_active_pct": [w.metrics.get("sm_active_pct") for w in ws]}
    return {
        "bottleneck": dominant.value, "gpu": gpu, "share": round(share, 2), "confidence": confidence,
        "series": series,
        "summary": summary, "decision": DECISIONS[dominant], "evidence": evidence,
        "undecided_between": [dominant.value] + alternatives if alternatives else [],
        "steady_s": round(total, 1), "startup_s": round(start, 1),
        "shutdown_s": round(samples[-1]["t"] - samples[0]["t"] - end, 1) if end is not None else 0.0,
        "timeline": timeline,
        "shares": {k.value: round(v / total, 2) for k, v in sorted(counts.items(), key=lambda kv: -kv[1])},
    }


def _mark_warmup(timeline: list[dict[str, Any]], dominant: str) -> list[dict[str, Any]]:
    """A short first phase after start-up that gives way to the dominant regime is the warm-up."""
    body = [i for i, r in enumerate(timeline) if r["regime"] not in ("start-up", "shut-down")]
    if len(body) >= 2:
        first, second = timeline[body[0]], timeline[body[1]]
        if first["regime"] != dominant and second["regime"] == dominant and \
                first["end_s"] - first["start_s"] < second["end_s"] - second["start_s"]:
            timeline[body[0]] = dict(first, regime=f"warm-up ({first['regime']})")
    return timeline


def from_flat_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of one GPU in the flat format of recorded NVML streams → sampler samples."""
    out = []
    for r in rows:
        g = {k: r[k] for k in ("util", "memutil", "used", "power", "sm_clk", "reasons", "temp") if k in r}
        g["index"] = 0
        if "gpm" in r:
            g["gpm"] = {str(k): v for k, v in r["gpm"].items()}
        out.append({"t": r["t"], "gpus": [g], "host": {}})
    return out
