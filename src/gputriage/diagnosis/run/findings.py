"""The findings of a monitored run (`run`, `watch`, `monitor()`): each GPU's verdict, a GPU held
idle around the work, host trouble (swapping, I/O wait) seen over the run, and the workload's own
processes (several on one GPU, an idle context, an out-of-memory error)."""

from __future__ import annotations

from gputriage.diagnosis.bottlenecks import severity_of
from gputriage.diagnosis.run.host_side import INPUT_READ, LOADER_WAITS, OTHERS_BUSY, RATE_WAITS
from gputriage.diagnosis.run.labels import VERDICT_SPECS
from gputriage.diagnosis.thresholds import IOWAIT, SWAP_IN
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold
from gputriage.model.numbers import median
from gputriage.model.run import GpuStatic, GpuVerdict, ProcessSummary
from gputriage.model.specs import pcie_link_gbs
from gputriage.model.window import Windows

RUN = ("run", "watch", "monitor")
LINK_SATURATED = Threshold(
    "link_saturated_share",
    0.7,
    "share of the link",
    "host-to-device traffic at which copies already run at the PCIe link's speed",
    "pinned copies reach 85-88% of the raw link rate (bench on an H200); judgement for 70%",
)
IDLE_EDGES_MIN = Threshold(
    "idle_edges_min_s", 30.0, "s", "start-up plus shut-down long enough to be worth a finding", "judgement"
)
IDLE_EDGES_SHARE = Threshold(
    "idle_edges_min_share",
    0.25,
    "share of the run",
    "start-up plus shut-down share of the run worth a finding",
    "judgement",
)

IDLE_EDGES = FindingSpec(
    id="run.idle_edges",
    step=2,
    severity=Severity.info,
    commands=("run",),
    needs=("gpu",),
    symptom="The GPU is held but idle before its first kernel and after its last",
    cause="Imports, data and model loading, compilation before the work; saving, joining workers and tearing down "
    "after it: the GPU is paid for and idle",
    decision="Load once and keep the process (a long-lived worker or server), keep torch.compile's cache between "
    "runs (TORCHINDUCTOR_CACHE_DIR), load weights straight to the GPU, checkpoint asynchronously; profile the "
    "start-up on the host (py-spy, pyinstrument)",
    condition=f"start-up + shut-down >= {IDLE_EDGES_MIN.value:g} s and >= {IDLE_EDGES_SHARE.value:.0%} of the run",
    thresholds=(IDLE_EDGES_MIN, IDLE_EDGES_SHARE),
)
HOST_SWAPPING = FindingSpec(
    id="run.host_swapping",
    step=4,
    severity=Severity.warn,
    commands=RUN,
    symptom="The host swapped pages back in during the run",
    cause="Host memory is short: the workload and its loaders page instead of feeding the GPU",
    decision="Lower host memory use (fewer/lighter DataLoader workers, smaller prefetch) or add RAM",
    condition="a swap-in rate above the threshold in any window",
    thresholds=(SWAP_IN,),
)
HOST_IOWAIT = FindingSpec(
    id="run.host_iowait",
    step=4,
    severity=Severity.warn,
    commands=RUN,
    symptom="CPUs waited on I/O during the run",
    cause="Storage or a network filesystem cannot feed the input pipeline",
    decision="Use local NVMe, sharded sequential formats, caching; measure with `gputriage bench`",
    condition="median iowait over the run's windows >= the threshold",
    thresholds=(IOWAIT,),
)
JOB_COMPUTING = Threshold(
    "job_computing_share",
    0.25,
    "share of samples",
    "share of the run in which a process of the job ran kernels (>= 5% of the time, NVML "
    "per-process utilization) for it to count as computing on the GPU",
    "judgement",
)
JOB_SHARES_GPU = FindingSpec(
    id="run.job_shares_gpu",
    step=3,
    severity=Severity.warn,
    commands=RUN,
    needs=("gpu",),
    symptom="Several processes of this job compute on one GPU",
    cause="Processes time-slice the GPU: each gets a share of its time (and holds its own CUDA context, "
    "~0.5 GB), so each runs slower than alone",
    decision="One computing process per GPU: give each process its own GPU (CUDA_VISIBLE_DEVICES per process, "
    "torchrun --nproc_per_node = the GPU count), or do the work in one process (threads, CUDA streams); "
    "where sharing is wanted, MPS runs the processes' kernels side by side",
    condition=f"two or more of the workload's processes each run kernels in >= {JOB_COMPUTING.value:.0%} of the "
    "samples on the same GPU",
    thresholds=(JOB_COMPUTING,),
)
IDLE_CONTEXT = FindingSpec(
    id="run.idle_cuda_context",
    step=3,
    severity=Severity.info,
    commands=RUN,
    needs=("gpu",),
    symptom="A process of this job holds GPU memory but never computes",
    cause="A helper process touched CUDA (a DataLoader worker, a child that imported and initialized torch.cuda): "
    "its context and cached memory sit on the GPU unused",
    decision="Keep CUDA out of helper processes: build tensors on the CPU in workers and move them in the main "
    "process; set CUDA_VISIBLE_DEVICES='' for children that need no GPU",
    condition=f"a workload process on a GPU whose kernels ran in < {JOB_COMPUTING.value:.0%} of the samples, while "
    "another process of the job computes there",
    thresholds=(JOB_COMPUTING,),
)
OUT_OF_MEMORY = FindingSpec(
    id="run.out_of_memory",
    step=3,
    severity=Severity.critical,
    commands=("run",),
    needs=("workload",),
    symptom="The workload ran out of GPU memory",
    cause="An allocation did not fit: the peak of weights, optimizer state, activations and the allocator's cache "
    "(blocks reserved but not in use: fragmentation) exceeded what the GPU had free; another process may hold "
    "part of it",
    decision="Lower the peak: a smaller batch or sequence, gradient checkpointing, bf16 weights and activations; "
    "where much memory is reserved but unused, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; check what "
    "else holds memory on the GPU (`gputriage check`)",
    condition="PyTorch's caching allocator raised an out-of-memory error in the workload (its counters, reported "
    "by Python workloads under `run`)",
)
INPUT_RATE_BOUND = FindingSpec(
    id="run.input_rate_bound",
    step=4,
    severity=severity_of(B.input_starved),
    commands=RUN,
    needs=("gpu", "workload"),
    symptom="The GPU waits for input that arrives slowly from outside the process",
    cause="The workload's main thread spends most of its time blocked for input from outside the process (a queue "
    "fed by a paced source, a socket, requests) while no thread of it is busy and little is read: neither the "
    "host nor the GPU sets the pace, the input rate does",
    decision="The input rate is the limit: batch requests (answer several per step), share the GPU (several models "
    "or jobs on it: MPS, MIG), or use a smaller one",
    condition="the verdict is input_starved and the main thread of the Python workload (its stack sampler) waits for "
    "input on no DataLoader most of the steady time, no Python thread busy beside it, little read, no "
    "iowait",
    thresholds=(RATE_WAITS, LOADER_WAITS, OTHERS_BUSY, INPUT_READ, IOWAIT),
)
SPECS = (
    *VERDICT_SPECS.values(),
    INPUT_RATE_BOUND,
    IDLE_EDGES,
    HOST_SWAPPING,
    HOST_IOWAIT,
    JOB_SHARES_GPU,
    IDLE_CONTEXT,
    OUT_OF_MEMORY,
)


def job_process_findings(processes: list[ProcessSummary]) -> list[Finding]:
    """Per GPU: the job's processes that compute there (more than one is a finding, with each one's
    share), and the ones that only hold memory beside one that computes."""
    out = []
    for gpu in sorted({p.gpu for p in processes if p.job}):
        mine = [p for p in processes if p.job and p.gpu == gpu and p.computing_share is not None]
        computing = [p for p in mine if p.computing_share >= JOB_COMPUTING.value]  # type: ignore[operator]
        idle = [p for p in mine if p.computing_share < JOB_COMPUTING.value]  # type: ignore[operator]
        shares = ", ".join(f"pid {p.pid} {p.sm_util_mean_pct:.0f}%" for p in computing)
        if len(computing) >= 2:
            out.append(
                JOB_SHARES_GPU.finding(
                    {"pids": [p.pid for p in computing], "sm_util_mean_pct": [p.sm_util_mean_pct for p in computing]},
                    subject=f"gpu.{gpu}",
                    symptom=f"GPU {gpu}: {len(computing)} processes of this job compute on it, each for a share of its "
                    f"time (kernels running: {shares})",
                )
            )
        if computing and idle:
            held = sum(p.used_max_bytes or 0 for p in idle)
            out.append(
                IDLE_CONTEXT.finding(
                    {"pids": [p.pid for p in idle], "used_max_bytes": held},
                    subject=f"gpu.{gpu}",
                    symptom=f"GPU {gpu}: {len(idle)} process{'es' if len(idle) > 1 else ''} of this job "
                    f"(pid {', '.join(str(p.pid) for p in idle)}) hold {held / 2**30:.1f} GiB and never compute",
                )
            )
    return out


def _link_saturated(v: GpuVerdict, gpu: GpuStatic) -> bool:
    rx = v.evidence.get("pcie_rx_mib_per_s")
    if not rx or not gpu.pcie_gen_max or not gpu.pcie_width_max:
        return False
    return rx * 1.048576 / 1000.0 >= LINK_SATURATED.value * pcie_link_gbs(gpu.pcie_gen_max, gpu.pcie_width_max)


def verdict_finding(v: GpuVerdict, gpu: GpuStatic) -> Finding | None:
    if v.bottleneck is None or v.bottleneck not in VERDICT_SPECS:
        return None
    b = v.bottleneck
    spec = VERDICT_SPECS[b]
    severity, cause, decision = spec.severity, v.summary, v.decision
    if b == B.h2d_copy_bound and _link_saturated(v, gpu):
        severity = Severity.info
        cause += " — at the PCIe link's capacity"
        decision = (
            "Copies already run at the link's speed: send fewer bytes (uint8/bf16 on the wire, decode on the "
            "GPU), overlap them with compute, or keep data resident on the GPU"
        )
    if v.undecided_between:
        cause += f" — the sampler cannot tell {' from '.join(x.value for x in v.undecided_between)} apart"
        decision += "; run again with `gputriage run --profile` to separate them"
    return spec.finding(
        v.evidence,
        subject=f"gpu.{v.gpu}",
        severity=severity,
        symptom=f"GPU {v.gpu}: {b.value.replace('_', ' ')} ({v.share:.0%} of steady time)",
        cause=cause,
        decision=decision,
    )


def idle_edges(v: GpuVerdict, run_s: float) -> Finding | None:
    """Time the GPU is held but not yet, or no longer, used: before its first kernel, after its last."""
    start, end = v.startup_s, v.shutdown_s
    if run_s <= 0 or start + end < IDLE_EDGES_MIN.value or (start + end) / run_s < IDLE_EDGES_SHARE.value:
        return None
    return IDLE_EDGES.finding(
        {"startup_s": start, "shutdown_s": end, "run_s": round(run_s, 1)},
        subject=f"gpu.{v.gpu}",
        symptom=f"GPU {v.gpu} held but idle {(start + end) / run_s:.0%} of the run: {start:.0f} "
        f"s "
        f"before its first kernel, {end:.0f} s after its last",
    )


def host_findings(series: Windows | None) -> list[Finding]:
    """Swapping and I/O wait over the run's windows (the host's figures are the same in every GPU's series)."""
    if series is None or not len(series):
        return []
    out = []
    swap = [x for x in series.column("swap_in_max_pages_per_s") if x is not None]
    if swap and max(swap) > SWAP_IN.value:
        out.append(
            HOST_SWAPPING.finding(
                {"max_swap_in_pages_per_s": max(swap), "windows_swapping": sum(1 for x in swap if x > 0)},
                subject="host",
            )
        )
    iowait = [x for x in series.column("iowait_pct") if x is not None]
    if iowait and median(iowait) >= IOWAIT.value:
        out.append(HOST_IOWAIT.finding({"median_iowait_pct": round(median(iowait), 1)}, subject="host"))
    return out


def out_of_memory(series: Windows | None) -> Finding | None:
    """The out-of-memory errors the workload's allocator raised, with the largest allocation that failed."""
    if series is None or not len(series):
        return None
    ooms = [x for x in series.column("ooms_total") if x is not None]
    if not ooms or max(ooms) < 1:
        return None
    asked = max((x for x in series.column("oom_requested_bytes") if x is not None), default=None)
    reserved = [x for x in series.column("allocator_reserved_bytes") if x is not None]
    evidence = {
        "ooms": max(ooms),
        "requested_mib": round(asked / 2**20, 1) if asked else None,
        "allocator_reserved_max_gib": round(max(reserved) / 2**30, 2) if reserved else None,
    }
    said = f": an allocation of {asked / 2**20:,.0f} MiB did not fit" if asked else ""
    return OUT_OF_MEMORY.finding(
        {k: v for k, v in evidence.items() if v is not None},
        subject="workload",
        symptom=f"The workload ran out of GPU memory ({max(ooms):.0f} error(s)){said}",
    )
