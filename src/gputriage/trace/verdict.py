"""The trace's verdict: the dominant bottleneck with its share of the window, and findings.

A GPU that idles is not the limit, so idle time is judged first: when the GPU idles at least
IDLE_VERDICT_PCT of the window, the verdict is the largest idle cause (launch → launch_bound,
sync → sync_bound, host work → input_starved). Otherwise it is the largest busy kind:
tensor-core GEMMs and attention → compute_bound, GEMMs on CUDA cores → tensor_cores_idle,
elementwise/reduction/GEMV → memory_bound, host↔device copies → h2d_copy_bound,
communication → comm_bound — unless most busy time is in kernels whose blocks cover under half
the SMs, which is underfilled.
"""

from __future__ import annotations

from typing import Any

from gputriage.model.bottleneck import DECISIONS, Bottleneck as B
from gputriage.model.finding import Finding, Severity
from gputriage.trace import kernel_kinds as kk
from gputriage.trace.anatomy import Anatomy

IDLE_VERDICT_PCT = 25.0
FINDING_MIN_PCT = 10.0
PAGEABLE_MIN_PCT = 2.0
CHAIN_MIN_BYTES = 64 * 2**20  # elementwise ops over tensors this large stream from HBM (beyond any L2)
CHAIN_MIN_KERNELS = 3  # distinct elementwise kernels over such tensors: a chain that fusion would collapse

IDLE_TO = {"launch": B.launch_bound, "sync": B.sync_bound, "host_outside_ops": B.input_starved,
           "host_in_ops": B.input_starved, "allocator": B.vram_pressure}
UNDERFILLED_BUSY_PCT = 50.0  # of busy time in kernels whose blocks cover under half the SMs
BUSY_TO = {kk.GEMM_TC: B.compute_bound, kk.ATTENTION: B.compute_bound, kk.GEMM_OTHER: B.tensor_cores_idle,
           kk.GEMV: B.memory_bound, kk.ELEMENTWISE: B.memory_bound, kk.COMM: B.comm_bound,
           kk.H2D_PAGEABLE: B.h2d_copy_bound, kk.H2D_PINNED: B.h2d_copy_bound, kk.D2H_PAGEABLE: B.h2d_copy_bound,
           kk.D2H_PINNED: B.h2d_copy_bound, kk.D2D: B.memory_bound, kk.MEMCPY_OTHER: B.h2d_copy_bound,
           kk.MEMSET: B.memory_bound}

# the shared decisions, but for a window in which the GPU did nothing
DECISION = DECISIONS | {B.idle: "The GPU did nothing in the profiled window: profile the steady state"}


def decide(a: Anatomy) -> dict[str, Any]:
    w = a.window_us or 1.0
    idle_pct = 100 * a.idle_total_us / w
    shares: dict[B, float] = {}
    for k, v in a.idle_us.items():
        if k in IDLE_TO:
            shares[IDLE_TO[k]] = shares.get(IDLE_TO[k], 0.0) + 100 * v / w
    busy_shares: dict[B, float] = {}
    for k, v in a.busy_us.items():
        busy_shares[BUSY_TO[k]] = busy_shares.get(BUSY_TO[k], 0.0) + 100 * v / w
    if a.busy_total_us <= 0:
        verdict, share = B.idle, 100.0
    elif idle_pct >= IDLE_VERDICT_PCT and shares:
        verdict = max(shares, key=lambda k: shares[k])
        share = shares[verdict]
    elif a.busy_total_us and 100 * a.underfilled_us / a.busy_total_us >= UNDERFILLED_BUSY_PCT:
        verdict, share = B.underfilled, 100 * a.underfilled_us / w
    else:
        verdict = max(busy_shares, key=lambda k: busy_shares[k])
        share = busy_shares[verdict]
    all_shares = {k.value: round(v, 1) for k, v in sorted({**busy_shares, **{k: v for k, v in shares.items()}}.items(),
                                                         key=lambda kv: -kv[1]) if v > 0}
    return {"bottleneck": verdict.value, "share_pct": round(share, 1), "gpu_idle_pct": round(idle_pct, 1),
            "decision": DECISION[verdict], "shares_pct": all_shares}


SLOW_GEMM_PCT_OF_PEAK = 50.0  # large tensor-core GEMMs reach 70-80% of the datasheet on a healthy GPU
SLOW_GEMM_MIN_US = 100.0  # only kernels long enough that shape and launch effects do not explain it
SLOW_GEMM_MIN_SHARE = 20.0  # of kernel time


def findings(a: Anatomy, kernels: list[dict[str, Any]], verdict: dict[str, Any], elementwise_bytes: float,
             chain_kernels: int = 0, spec: Any = None) -> list[Finding]:
    """Findings with decisions for every cause above its threshold, the verdict's first."""
    w = a.window_us or 1.0
    pct = lambda us: round(100 * us / w, 1)  # noqa: E731
    out: list[Finding] = []
    subject = f"gpu.{a.device}"

    def add(bott: B, sev: Severity, symptom: str, cause: str, evidence: dict[str, Any]) -> None:
        out.append(Finding(id=f"trace.{bott.value}", severity=sev, step=2, symptom=symptom, cause=cause,
                           decision=DECISION[bott], evidence=evidence, subject=subject))

    idle = a.idle_us
    if pct(idle.get("launch", 0)) >= FINDING_MIN_PCT:
        add(B.launch_bound, Severity.warn, f"GPU idle {pct(idle['launch'])}% of the window waiting for kernel launches",
            f"{a.kernel_count} kernels with a median of {a.median_kernel_us:.1f} µs; the median gap between them is "
            f"{a.median_gap_us:.1f} µs: the host issues kernels slower than the GPU runs them",
            {"launch_idle_pct": pct(idle["launch"]), "kernels": a.kernel_count,
             "median_kernel_us": round(a.median_kernel_us, 2), "median_gap_us": round(a.median_gap_us, 2)})
    if pct(idle.get("sync", 0)) >= FINDING_MIN_PCT:
        top = a.syncs.get("by_op", [])[:3]
        add(B.sync_bound, Severity.warn, f"GPU idle {pct(idle['sync'])}% of the window after host synchronizations",
            f"{a.syncs.get('count', 0)} synchronizing calls drained the GPU queue; the host then had to issue work "
            f"again. Most from: " + ", ".join(f"{t['op']} ({t['calls']}x)" for t in top),
            {"sync_idle_pct": pct(idle["sync"]), "sync_calls": a.syncs.get("count", 0), "by_op": top})
    host = idle.get("host_outside_ops", 0) + idle.get("host_in_ops", 0)
    if pct(host) >= FINDING_MIN_PCT:
        add(B.input_starved, Severity.warn, f"GPU idle {pct(host)}% of the window while the host works",
            f"{pct(idle.get('host_outside_ops', 0))}% outside framework ops (Python, data loading, preprocessing, "
            f"sleeping), {pct(idle.get('host_in_ops', 0))}% inside framework ops that launch no GPU work",
            {"host_outside_ops_pct": pct(idle.get("host_outside_ops", 0)),
             "host_in_ops_pct": pct(idle.get("host_in_ops", 0))})
    busy = a.busy_us
    pageable = busy.get(kk.H2D_PAGEABLE, 0) + busy.get(kk.D2H_PAGEABLE, 0)
    copies = pageable + busy.get(kk.H2D_PINNED, 0) + busy.get(kk.D2H_PINNED, 0)
    if pct(pageable) >= PAGEABLE_MIN_PCT or pct(copies) >= FINDING_MIN_PCT:
        add(B.h2d_copy_bound, Severity.warn if pct(pageable) >= PAGEABLE_MIN_PCT else Severity.info,
            f"Host↔device copies take {pct(copies)}% of the window ({pct(pageable)}% from pageable memory)",
            "Copies from pageable memory are staged through a driver buffer and run at a fraction of the link's "
            "speed, and they block the host",
            {"copies_pct": pct(copies), "pageable_pct": pct(pageable), "h2d_pinned_pct": pct(busy.get(kk.H2D_PINNED, 0))})
    gemm_other = busy.get(kk.GEMM_OTHER, 0)
    if pct(gemm_other) >= FINDING_MIN_PCT:
        names = [k["name"][:60] for k in kernels if k["kind"] == kk.GEMM_OTHER][:2]
        add(B.tensor_cores_idle, Severity.warn, f"GEMMs on CUDA cores take {pct(gemm_other)}% of the window",
            "Full-precision fp32 math without TF32 runs on CUDA cores at a fraction of the tensor-core rate: " +
            ", ".join(names), {"gemm_cuda_cores_pct": pct(gemm_other),
                               "gemm_tensor_cores_pct": pct(busy.get(kk.GEMM_TC, 0))})
    elem = busy.get(kk.ELEMENTWISE, 0)
    if pct(elem) >= FINDING_MIN_PCT:
        chain = elementwise_bytes >= CHAIN_MIN_BYTES and chain_kernels >= CHAIN_MIN_KERNELS
        add(B.memory_bound, Severity.warn if chain and verdict["bottleneck"] == B.memory_bound.value else Severity.info,
            f"Elementwise and reduction kernels take {pct(elem)}% of the window",
            "Each unfused op reads and writes whole tensors from device memory: time goes to moving bytes, "
            f"not math (median {elementwise_bytes / 2**20:.0f} MiB per op)" if elementwise_bytes else
            "Each unfused op reads and writes whole tensors from device memory",
            {"elementwise_pct": pct(elem), "median_bytes_per_op": int(elementwise_bytes),
             "distinct_elementwise_kernels": chain_kernels})
    if pct(idle.get("allocator", 0)) >= FINDING_MIN_PCT:
        add(B.vram_pressure, Severity.warn, f"GPU idle {pct(idle['allocator'])}% of the window after cudaMalloc/cudaFree",
            "The caching allocator returns memory to the driver and asks for it again; cudaFree synchronizes the device",
            {"allocator_idle_pct": pct(idle["allocator"])})
    if a.busy_total_us >= 0.5 * w and 100 * a.underfilled_us / a.busy_total_us >= UNDERFILLED_BUSY_PCT:
        add(B.underfilled, Severity.warn, f"{100 * a.underfilled_us / a.busy_total_us:.0f}% of GPU busy time is in "
            "kernels whose blocks cover under half the SMs", "Kernels too small for the GPU: busy by nvidia-smi, most SMs idle",
            {"underfilled_busy_pct": round(100 * a.underfilled_us / a.busy_total_us, 1),
             "median_kernel_us": round(a.median_kernel_us, 2)})
    if spec is not None:
        from gputriage.trace.kernels import peak_dtype

        for k in kernels:
            peak = spec.tflops(peak_dtype(k["kind"], k.get("dtype", "")))
            rate = k.get("achieved_tflops")
            if (k["kind"] == kk.GEMM_TC and peak and rate and k["median_us"] >= SLOW_GEMM_MIN_US
                    and k["pct_of_kernel_time"] >= SLOW_GEMM_MIN_SHARE and 100 * rate / peak < SLOW_GEMM_PCT_OF_PEAK):
                out.append(Finding(id="trace.slow_gemms", severity=Severity.warn, step=2,
                                   symptom=f"Large tensor-core GEMMs reach {rate:.0f} TFLOP/s, {100 * rate / peak:.0f}% "
                                           f"of the {spec.name}'s {peak:g}",
                                   cause="Kernels long enough to run at full rate run slowly: the GPU is time-sliced "
                                         "with another process, or its clocks are held down (power, thermal)",
                                   decision="Look for other processes on the GPU and clock-event reasons (`gputriage "
                                            "check`, or `gputriage run`, which sees both); compare with `gputriage bench`",
                                   evidence={"kernel": k["name"][:80], "achieved_tflops": rate, "datasheet_tflops": peak,
                                             "median_us": k["median_us"], "pct_of_kernel_time": k["pct_of_kernel_time"]},
                                   subject=subject))
                break
    comm = busy.get(kk.COMM, 0)
    if pct(comm) >= FINDING_MIN_PCT:
        add(B.comm_bound, Severity.warn, f"Communication kernels take {pct(comm)}% of the window",
            "Collectives that do not overlap computation add directly to step time", {"comm_pct": pct(comm)})
    order = {f.id: (0 if f.id == f"trace.{verdict['bottleneck']}" else 1) for f in out}
    return sorted(out, key=lambda f: (order[f.id], -int(f.severity)))
