"""The findings of a profiled window (`trace.*`): every cause above its threshold, with the figures
of the trace that show it, the verdict's first."""

from __future__ import annotations

from gputriage.diagnosis.bottlenecks import D2H_COPY_DECISION
from gputriage.diagnosis.trace.specs import (
    CHAIN_MIN_KERNELS,
    FINDING_MIN,
    FP64_GEMMS,
    LINK_COPY_CAUSE,
    LINK_COPY_DECISION,
    OLDER_ARCH_CAUSE,
    OLDER_ARCH_DECISION,
    PAGEABLE_COPY_CAUSE,
    PAGEABLE_MIN,
    PINNED_COPY_CAUSE,
    PINNED_COPY_DECISION,
    SLOW_GEMM,
    SLOW_GEMM_MIN_US,
    SLOW_GEMM_SHARE,
    SLOW_GEMMS,
    SPECS,
)
from gputriage.diagnosis.trace.verdict import DECISION, UNDERFILLED_BUSY, d2h_us, mostly_d2h
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, Severity
from gputriage.model.specs import GpuSpec
from gputriage.model.trace import Anatomy, RankAnalysis, TraceVerdict, rate_unit
from gputriage.trace import kernel_kinds as kk
from gputriage.trace.analyze import LARGE_TENSOR_BYTES
from gputriage.trace.kernels import peak_dtype


def findings(r: RankAnalysis, verdict: TraceVerdict, spec: GpuSpec | None = None) -> list[Finding]:
    """Findings with decisions for every cause above its threshold, the verdict's first."""
    a = r.main()
    if a is None:
        return []
    w = a.window_us or 1.0

    def pct(us: float) -> float:
        return round(100 * us / w, 1)

    out: list[Finding] = []
    subject = f"gpu.{a.device}"

    def add(b: B, severity: Severity, symptom: str, cause: str, evidence: dict) -> None:
        out.append(SPECS[b].finding(evidence, subject=subject, severity=severity, symptom=symptom, cause=cause))

    launch, sync = a.idle_of("launch"), a.idle_of("sync")
    if pct(launch) >= FINDING_MIN.value:
        f = SPECS[B.launch_bound].finding(
            {
                "launch_idle_pct": pct(launch),
                "kernels": a.kernels,
                "median_kernel_us": a.median_kernel_us,
                "median_gap_us": a.median_gap_us,
                "sync_calls": a.syncs.count,
            },
            subject=subject,
            symptom=f"GPU idle {pct(launch)}% of the window waiting for kernel launches",
            cause=f"{a.kernels} kernels with a median of {a.median_kernel_us:.1f} µs; the median gap between them "
            f"is {a.median_gap_us:.1f} µs: the host issues kernels slower than the GPU runs them",
            decision=_launch_decision(a),
        )
        out.append(f)
    if pct(sync) >= FINDING_MIN.value:
        top = a.syncs.by_op[:3]
        calls = a.syncs.count
        add(
            B.sync_bound,
            Severity.warn,
            f"GPU idle {pct(sync)}% of the window after host synchronizations",
            f"{calls} synchronizing call{'s' if calls != 1 else ''} drained the GPU queue; the host then had to issue "
            "work again. Most from: " + ", ".join(f"{t.op} ({t.calls}x)" for t in top),
            {
                "sync_idle_pct": pct(sync),
                "sync_calls": calls,
                "by_op": [{"op": t.op, "calls": t.calls, "gpu_idle_after_us": t.gpu_idle_after_us} for t in top],
            },
        )
    outside, inside, after_read = a.idle_of("host_outside_ops"), a.idle_of("host_in_ops"), a.idle_of("host_after_read")
    if pct(inside + after_read) >= FINDING_MIN.value:
        add(
            B.host_bound,
            Severity.warn,
            f"GPU idle {pct(inside + after_read)}% of the window while the host computes",
            _host_work_cause(a, pct(inside), pct(after_read)),
            {
                "host_in_ops_pct": pct(inside),
                "host_after_read_pct": pct(after_read),
                "by_op": [
                    {"op": h.op, "where": h.where, "gaps": h.gaps, "gpu_idle_us": h.gpu_idle_us}
                    for h in a.host_work[:3]
                ],
            },
        )
    if pct(outside) >= FINDING_MIN.value:
        add(
            B.input_starved,
            Severity.warn,
            f"GPU idle {pct(outside)}% of the window while the host works outside framework ops",
            "Python, data loading, preprocessing or sleeping between the GPU's work",
            {"host_outside_ops_pct": pct(outside)},
        )
    pageable = a.busy_of(kk.H2D_PAGEABLE) + a.busy_of(kk.D2H_PAGEABLE)
    copies = pageable + a.busy_of(kk.H2D_PINNED) + a.busy_of(kk.D2H_PINNED)
    if pct(pageable) >= PAGEABLE_MIN.value or pct(copies) >= FINDING_MIN.value:
        d2h = d2h_us(a)
        severity, cause, decision = _copy_wording(pct(pageable), pct(copies), pct(a.busy_us - copies))
        out.append(
            SPECS[B.h2d_copy_bound].finding(
                {
                    "copies_pct": pct(copies),
                    "pageable_pct": pct(pageable),
                    "h2d_pinned_pct": pct(a.busy_of(kk.H2D_PINNED)),
                    "d2h_pct": pct(d2h),
                },
                subject=subject,
                severity=severity,
                symptom=f"Host↔device copies take {pct(copies)}% of the window ({pct(pageable)}% from pageable memory, "
                f"{pct(d2h)}% device to host)",
                cause=cause,
                decision=D2H_COPY_DECISION if mostly_d2h(a) else decision,
            )
        )
    gemm_other = a.busy_of(kk.GEMM_OTHER)
    if pct(gemm_other) >= FINDING_MIN.value:
        names = [k.name[:60] for k in r.kernels if k.kind == kk.GEMM_OTHER][:2]
        add(
            B.tensor_cores_idle,
            Severity.warn,
            f"GEMMs on CUDA cores take {pct(gemm_other)}% of the window",
            "Full-precision fp32 math without TF32 runs on CUDA cores at a fraction of the tensor-core rate: "
            + ", ".join(names),
            {"gemm_cuda_cores_pct": pct(gemm_other), "gemm_tensor_cores_pct": pct(a.busy_of(kk.GEMM_TC))},
        )
    fp64 = a.busy_of(kk.GEMM_FP64)
    if pct(fp64) >= FINDING_MIN.value:
        rates = [k.achieved_tflops for k in r.kernels if k.kind == kk.GEMM_FP64 and k.achieved_tflops]
        out.append(
            FP64_GEMMS.finding(
                {"gemm_fp64_pct": pct(fp64), "achieved_tflops": max(rates) if rates else None},
                subject=subject,
                symptom=f"fp64 GEMMs take {pct(fp64)}% of the window"
                + (f" (up to {max(rates):.1f} TFLOP/s)" if rates else ""),
            )
        )
    elem = a.busy_of(kk.ELEMENTWISE)
    if pct(elem) >= FINDING_MIN.value:
        size = r.elementwise_median_bytes
        chain = size >= LARGE_TENSOR_BYTES and r.elementwise_large_kernels >= CHAIN_MIN_KERNELS.value
        add(
            B.memory_bound,
            Severity.warn if chain and verdict.bottleneck == B.memory_bound else Severity.info,
            f"Elementwise and reduction kernels take {pct(elem)}% of the window",
            "Each unfused op reads and writes whole tensors from device memory: time goes to moving bytes, not math "
            f"(median {size / 2**20:.0f} MiB per op)"
            if size
            else "Each unfused op reads and writes whole tensors from device memory",
            {
                "elementwise_pct": pct(elem),
                "median_bytes_per_op": int(size),
                "distinct_elementwise_kernels": r.elementwise_large_kernels,
            },
        )
    alloc = a.idle_of("allocator")
    if pct(alloc) >= FINDING_MIN.value:
        add(
            B.vram_pressure,
            Severity.warn,
            f"GPU idle {pct(alloc)}% of the window after cudaMalloc/cudaFree",
            "The caching allocator returns memory to the driver and asks for it again; cudaFree synchronizes the "
            "device",
            {"allocator_idle_pct": pct(alloc)},
        )
    if a.busy_us >= 0.5 * w and 100 * a.underfilled_us / a.busy_us >= UNDERFILLED_BUSY.value:
        share = round(100 * a.underfilled_us / a.busy_us, 1)
        add(
            B.underfilled,
            Severity.warn,
            f"{share:.0f}% of GPU busy time is in kernels whose blocks cover under half the SMs",
            "Kernels too small for the GPU: busy by nvidia-smi, most SMs idle",
            {"underfilled_busy_pct": share, "median_kernel_us": a.median_kernel_us},
        )
    slow = _slow_gemm(r, spec, subject)
    if slow is not None:
        out.append(slow)
    comm = a.busy_of(kk.COMM)
    if pct(comm) >= FINDING_MIN.value:
        overlapped = r.overlap.overlapped_pct if r.overlap else None
        add(
            B.comm_bound,
            Severity.warn,
            f"Communication that no computation overlaps takes {pct(comm)}% of the window"
            + (f" ({overlapped:.0f}% of communication time overlaps)" if overlapped is not None else ""),
            "Collectives that do not overlap computation add directly to step time",
            {"exposed_comm_pct": pct(comm), "comm_overlapped_pct": overlapped},
        )
    lead = f"trace.{verdict.bottleneck.value}" if verdict.bottleneck else ""
    return sorted(out, key=lambda f: (f.id != lead, -f.severity.rank))


def _host_work_cause(a: Anatomy, in_ops_pct: float, after_read_pct: float) -> str:
    """Where the host computed: the ops on CPU tensors, and the reads the host computed on."""
    parts = []
    if in_ops_pct:
        ops = ", ".join(f"{h.op} ({h.gpu_idle_us / 1000:.1f} ms)" for h in a.host_work if h.where == "in_ops")
        parts.append(f"{in_ops_pct}% inside framework ops that launch no GPU work (CPU tensors): {ops}")
    if after_read_pct:
        ops = ", ".join(f"{h.op} ×{h.gaps}" for h in a.host_work if h.where == "after_read")
        parts.append(
            f"{after_read_pct}% after reading a result back to the host, outside framework ops "
            f"(numpy, Python), read by {ops}"
        )
    return "; ".join(parts)


def _launch_decision(a: Anatomy) -> str:
    """Launch fewer, bigger kernels — but a loop that synchronizes cannot be captured in a CUDA graph:
    its syncs go first."""
    if not a.syncs.count:
        return DECISION[B.launch_bound]
    ops = ", ".join(f"{s.op} ×{s.calls}" for s in a.syncs.by_op[:3])
    return (
        f"First remove the host synchronizations in the loop ({ops}: keep values on the GPU, read them every "
        "N steps): a CUDA graph cannot capture a loop that synchronizes, and each sync drains the queue. Then "
        "launch fewer, bigger kernels: CUDA graphs (torch.cuda.graphs) or torch.compile(mode='reduce-overhead'), "
        "larger batches, fused ops"
    )


def _copy_wording(pageable_pct: float, copies_pct: float, other_busy_pct: float) -> tuple[Severity, str, str | None]:
    """Severity, cause and decision of the copy finding: pageable copies warn with the spec's advice; pinned ones
    warn where overlapping them with the rest of the GPU's work would save a tenth of the window or more (the
    shorter of the two), and otherwise say the link is the limit."""
    if pageable_pct >= PAGEABLE_MIN.value:
        return Severity.warn, PAGEABLE_COPY_CAUSE, None
    if min(copies_pct, other_busy_pct) >= FINDING_MIN.value:
        return Severity.warn, PINNED_COPY_CAUSE, PINNED_COPY_DECISION
    return Severity.info, LINK_COPY_CAUSE, LINK_COPY_DECISION


def _slow_gemm(r: RankAnalysis, spec: GpuSpec | None, subject: str) -> Finding | None:
    if spec is None:
        return None
    for k in r.kernels:
        peak, unit = spec.tflops(peak_dtype(k.kind, k.dtype or "")), rate_unit(k.dtype or "")
        rate = k.achieved_tflops
        if (
            k.kind == kk.GEMM_TC
            and peak
            and rate
            and k.roof != "memory"
            and k.median_us >= SLOW_GEMM_MIN_US.value
            and k.pct_of_kernel_time >= SLOW_GEMM_SHARE.value
            and 100 * rate / peak < SLOW_GEMM.value
        ):
            older = _older_arch(k.name, spec)
            return SLOW_GEMMS.finding(
                {
                    "kernel": k.name[:80],
                    "achieved_tflops": rate,
                    "datasheet_tflops": peak,
                    "median_us": k.median_us,
                    "pct_of_kernel_time": k.pct_of_kernel_time,
                }
                | ({"built_for": older} if older else {}),
                subject=subject,
                symptom=f"Large tensor-core GEMMs reach {rate:.0f} {unit}, {100 * rate / peak:.0f}% of the "
                f"{spec.name}'s {peak:g}" + (" for int8" if unit == "TOPS" else ""),
                cause=OLDER_ARCH_CAUSE.format(older=older) if older else None,
                decision=OLDER_ARCH_DECISION if older else None,
            )
    return None


def _older_arch(kernel: str, spec: GpuSpec) -> str | None:
    """Where a kernel built for an older GPU generation runs on Hopper or newer (which it cannot use the tensor-core
    instructions of): what the name says, e.g. 'sm_80 code on compute capability 9.0'."""
    cc = str(spec.data.get("compute_capability") or "")
    built = kk.kernel_arch(kernel)
    try:
        major = int(cc.split(".")[0])
    except ValueError:
        return None
    if built is None or major < 9 or ("forwardCompat" not in kernel and built >= 10 * major):
        return None
    return f"{'sm_' + str(built) if built else 'forward-compatible'} code on compute capability {cc}"


def as_profiler_artefact(f: Finding, why: str) -> Finding:
    """A trace finding that describes the profiler's own overhead: kept, as information."""
    return Finding(
        id=f.id,
        severity=Severity.info,
        step=f.step,
        symptom=f.symptom + " (while profiled)",
        cause=f"{f.cause}; but {why}",
        decision=f.decision,
        evidence=f.evidence,
        subject=f.subject,
    )
