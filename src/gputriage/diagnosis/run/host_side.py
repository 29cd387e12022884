"""What tells the host-side causes apart, in a window whose GPU idles a quarter of the time or more: the thresholds
and the figures the host-side label rules (`diagnosis.run.host_rules`) read — where the main thread of a Python
workload spent its time (the stack sampler's shares, `from_stacks`); else the workload's CPU (its processes holding
a GPU context apart from their helpers, their busiest and main threads), what it reads from files and writes to
storage, and what it reads back from the GPU."""

from __future__ import annotations

from typing import Mapping

from gputriage.diagnosis.thresholds import H200_RECORDINGS
from gputriage.inworkload.stack_categories import (
    COLLECTIVE_WAIT,
    COMPILE,
    COPY,
    GC,
    GPU_WAIT,
    HOST_COMPUTE,
    HOST_OPS,
    INPUT_WAIT,
    LAUNCH,
    LOOP,
    SHARE_FIELDS,
)
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Threshold
from gputriage.model.window import WindowMetrics

GPU_MOSTLY_IDLE_UTIL = Threshold(
    "mostly_idle_util_pct",
    30.0,
    "%",
    "GPU-Util under which the GPU idles most of the time",
    f"{H200_RECORDINGS}: input-starved loops at 10-25%",
)
HOT_THREAD = Threshold(
    "hot_thread_pct",
    85.0,
    "% of a core",
    "a workload thread this busy is saturated",
    f"{H200_RECORDINGS}: launch-bound loops 95-100%",
)
HOST_READS_BACK = Threshold(
    "host_reads_back_mib_per_s",
    100.0,
    "MiB/s",
    "device-to-host traffic (PCIe TX) that says the host copies results back to compute on them",
    f"{H200_RECORDINGS}: numpy statistics on an activation 220-260 MiB/s, a CPU "
    "optimizer 1,070 MiB/s; .item() syncs and launch-bound loops 5-18 MiB/s",
)
READ_REQUESTS = Threshold(
    "pcie_read_request_share",
    0.1,
    "of PCIe RX",
    "PCIe TX that host-to-device copies cause by themselves (the GPU's DMA read requests), "
    "not counted as data read back",
    f"{H200_RECORDINGS}: copies alone 0.060 of RX in four runs with GPM, 0.091 in one without",
)
HOST_WRITES = Threshold(
    "host_writes_mb_per_s",
    100.0,
    "MB/s",
    "the workload's writes to storage that say it saves (checkpoints, dumps) while the GPU waits",
    f"{H200_RECORDINGS}: a 1.6 GB checkpoint every 10 steps 300-800 MB/s; training and inference loops under 1 MB/s",
)
INPUT_HELPERS_CPU = Threshold(
    "input_helpers_cpu_pct",
    100.0,
    "% of a core",
    "the CPU of the workload's processes without a GPU context (DataLoader workers) that "
    "says they make the input the GPU waits for",
    f"judgement, a worker busy all the time; {H200_RECORDINGS}: 4 workers augmenting "
    "in-memory images 340% (the training process 8%), an idle loader's workers 5%",
)
MAIN_THREAD_WAITS = Threshold(
    "main_thread_waits_pct",
    50.0,
    "% of a core",
    "the main thread of a process holding a GPU context under which it is not the one keeping the process busy",
    f"judgement; {H200_RECORDINGS}: a Python thread holding "
    "the GIL left the main thread at 2-3%; launch-bound loops' main threads 95-100%, 40-58% "
    "where autograd's thread launches the backward (the thread beside it at 60% or less)",
)
HOST_PARALLEL_CPU = Threshold(
    "host_compute_cpu_pct",
    250.0,
    "% of a core per GPU process",
    "the workload's CPU per process holding a GPU context that says it computes on the host in several threads",
    f"{H200_RECORDINGS}: a CPU AdamW 700%; launch-bound and sync-bound loops 100%, a 2-rank DDP job 100% per rank",
)
INPUT_READ = Threshold(
    "input_read_mb_per_s",
    20.0,
    "MB/s",
    "the workload's reads (files, pipes, sockets) that say it loads input while the GPU waits",
    f"{H200_RECORDINGS}: a file-fed loader 300+ MB/s, a sync-bound loop < 1 MB/s",
)

STACK_SAMPLES = Threshold(
    "stack_min_samples",
    20.0,
    "samples",
    "the main thread's stack samples in a window for their shares to decide the host-side cause",
    "judgement: 50 samples a second; 20 put each share within 0.23 (binomial, two sigmas), "
    "enough to name the one the main thread spends most time in",
)
STACK_SAMPLES_CLEAR = Threshold(
    "stack_min_samples_clear",
    10.0,
    "samples",
    "fewer stack samples that still decide a window when one category holds CLEAR_SHARE of them (a main thread "
    "that holds the interpreter lock through long calls, compiling, leaves its sampler few rounds)",
    "judgement: at 10 samples a share of 0.8 is 0.55 or more at two sigmas (binomial), the others 0.2 at most; "
    "H200 recordings of torch.compile compiling from cold caches: 10-16 samples in a second, compiling 0.6-0.96",
)
CLEAR_SHARE = Threshold(
    "stack_clear_share",
    0.8,
    "of the samples",
    "the share of one category that lets STACK_SAMPLES_CLEAR samples decide a window",
    "judgement: see STACK_SAMPLES_CLEAR",
)
STACK_RULES = (STACK_SAMPLES, STACK_SAMPLES_CLEAR, CLEAR_SHARE)  # when stack samples decide a window
OTHERS_BUSY = Threshold(
    "python_threads_busy",
    0.85,
    "threads",
    "Python threads beside the main one at work (not waiting), on average, that say one of them "
    "holds the interpreter lock the main thread needs, or does the work itself",
    "judgement: HOT_THREAD's share of a core",
)
LOADER_WAITS = Threshold(
    "loader_wait_share",
    0.5,
    "of the input waits",
    "the main thread's input waits spent in a DataLoader that say its workers, not the world "
    "outside the process, make the input",
    "judgement",
)
RATE_WAITS = Threshold(
    "input_rate_wait_share",
    0.5,
    "of the steady time",
    "the main thread's time blocked for input from outside the process (queues, sockets, sleep) "
    "that says the input rate sets the pace",
    "judgement: most of its time",
)
CLOSE_SHARE = Threshold(
    "stack_close_share",
    0.6,
    "of the first category's share",
    "a second category of the main thread's time this close to the first stays possible",
    "judgement: within the binomial spread of STACK_SAMPLES samples",
)
CLOSE_MIN_SHARE = Threshold(
    "stack_close_min_share",
    0.2,
    "of the samples",
    "the least share of the main thread's time for a second category to stay possible",
    "judgement: a fifth of the window",
)
STEP_READS = Threshold(
    "main_thread_gpu_wait_share",
    0.1,
    "of the samples",
    "the main thread's time blocked on the GPU that says, where it mostly computes on the host, that it reads a "
    "result back every step: the queue drains at each read and the GPU idles while the host works after it",
    "H100 recording of examples/libraries/jax_sync_each_step.py (`float(loss)` every step, then NumPy): 0.16 in the "
    f"window that decided it, 0.32 over its steady run; {H200_RECORDINGS}: input-starved loops (list_batches, "
    "paced_queue_service, a slow DataLoader) 0.00-0.03, Lightning's loop 0.07",
)
_BY_CATEGORY = {
    GPU_WAIT: B.sync_bound,
    INPUT_WAIT: B.input_starved,
    COPY: B.h2d_copy_bound,
    HOST_COMPUTE: B.input_starved,
    COMPILE: B.host_bound,
    GC: B.host_bound,
    LAUNCH: B.launch_bound,
    LOOP: B.launch_bound,  # counted with LAUNCH (`decisive`): the loop's own Python between the launches it makes
    HOST_OPS: B.host_bound,  # a library's ops computed on the CPU (ONNX Runtime's CPU provider, JAX on the CPU)
    COLLECTIVE_WAIT: B.comm_bound,  # a rank waiting for its peers: `run.waits_for_straggler` words it where one is late
}


def stack_shares(m: WindowMetrics | Mapping[str, float]) -> dict[str, float] | None:
    """The main thread's share of the time per category (a window's, or a verdict's evidence), when enough samples
    stand behind them; else None."""
    get = m.get if isinstance(m, Mapping) else lambda name: getattr(m, name)
    samples = get("host_stack_samples") or 0.0
    if samples < STACK_SAMPLES_CLEAR.value:
        return None
    shares = {c: get(field) or 0.0 for c, field in SHARE_FIELDS.items()}
    return shares if samples >= STACK_SAMPLES.value or max(shares.values()) >= CLEAR_SHARE.value else None


def decisive(shares: Mapping[str, float]) -> dict[str, float]:
    """The shares the host-side cause is named from: a training framework's loop (Lightning's, the Trainer's hooks,
    callbacks and logging) counted with the launches it interleaves — the host's time per step around small kernels,
    one cause — never as input."""
    out = {c: v for c, v in shares.items() if c != LOOP}
    out[LAUNCH] = out.get(LAUNCH, 0.0) + shares.get(LOOP, 0.0)
    return out


def waits_for_input(shares: Mapping[str, float]) -> bool:
    """The main thread waited for input RATE_WAITS of its time or more, longer than it did anything else."""
    return shares[INPUT_WAIT] >= RATE_WAITS.value and shares[INPUT_WAIT] == max(shares.values())


def stacks_say(shares: Mapping[str, float], b: B, util: float | None = None) -> bool:
    """The main thread's dominant category names `b`, as `from_stacks` names it (`util`: GPU-Util, %)."""
    shares = decisive(shares)
    top = max(shares, key=lambda c: shares[c])
    in_ops_on_host = top == LAUNCH and ran_no_kernel(util)
    reads_each_step = top == HOST_COMPUTE and reads_every_step(shares)
    return (
        _BY_CATEGORY[top] == b
        or (b == B.host_bound and (top in (HOST_COMPUTE, GPU_WAIT) or in_ops_on_host))
        or (b == B.sync_bound and reads_each_step)
    )


def reads_every_step(shares: Mapping[str, float]) -> bool:
    """The main thread, computing on the host, also waits on the GPU (STEP_READS): it reads a result every step."""
    return shares.get(GPU_WAIT, 0.0) >= STEP_READS.value


def ran_no_kernel(util: float | None) -> bool:
    """GPU-Util 0: inside torch's ops, the main thread works on the host (CPU tensors, torch's own Python)."""
    return util is not None and util <= 0.0


def waits_on_loader(
    input_share: float, loader_share: float | None, workload_cpu_pct: float | None, gpu_process_cpu_pct: float | None
) -> bool:
    """The main thread's input waits are on a DataLoader's workers (or busy input workers run beside it)."""
    return (loader_share or 0.0) >= LOADER_WAITS.value * input_share or helpers_busy(
        workload_cpu_pct, gpu_process_cpu_pct
    )


def from_stacks(m: WindowMetrics, util: float, small: bool | None) -> tuple[B, list[B]] | None:
    """The host-side cause from where the main thread spent the window; None where its
    stacks were not sampled, or leave it to the CPU's figures: a Python thread at work beside it (the interpreter
    lock, a server's launching thread), kernels that fill the GPU while it launches. In torch's ops while the GPU
    ran no kernel, the host works in them (on CPU tensors, in torch's own Python: a compiled function's guards and
    its eager fallback): host_bound, not launch_bound."""
    seen = stack_shares(m)
    if seen is None:
        return None
    shares = decisive(seen)
    top = max(shares, key=lambda c: shares[c])
    if (m.host_others_busy or 0.0) >= OTHERS_BUSY.value and top in (INPUT_WAIT, HOST_COMPUTE, LAUNCH):
        return None
    no_kernel = ran_no_kernel(util)
    if top == LAUNCH and small is False and not no_kernel:
        return None
    host_work_seen = reads_back_or_saves(m.pcie_tx_mib_per_s, m.pcie_rx_mib_per_s, m.write_mb_per_s)
    if top == HOST_COMPUTE and (
        host_work_seen
        or computes_in_threads(
            m.gpu_process_cpu_pct if m.gpu_process_cpu_pct is not None else m.workload_cpu_pct, m.job_gpu_processes
        )
    ):
        b = B.host_bound  # it computes on what it read back from the GPU, or on several cores: not the input
    elif top == HOST_COMPUTE and reads_every_step(shares):
        b = B.sync_bound  # it waits for a result every step, then works on the host while the GPU has nothing
    elif (top == GPU_WAIT and host_work_seen) or (top == LAUNCH and no_kernel):
        b = B.host_bound  # reads results back to work on them on the host; works in torch's ops
    else:
        b = _BY_CATEGORY[top]
    near = max(CLOSE_MIN_SHARE.value, CLOSE_SHARE.value * shares[top])
    close = {_BY_CATEGORY[c] for c, v in shares.items() if c != top and v >= near}
    if top == HOST_COMPUTE and b in (B.input_starved, B.sync_bound):
        close |= {B.input_starved, B.host_bound}  # the batches it makes, or work on results: frames cannot tell which
    close.discard(b)
    return b, sorted(close, key=lambda x: x.value)


def helpers_cpu(workload_cpu_pct: float | None, gpu_process_cpu_pct: float | None) -> float | None:
    """The CPU of the workload's processes without a GPU context (DataLoader workers, helpers); None when the
    processes on the GPU were not read apart."""
    if workload_cpu_pct is None or gpu_process_cpu_pct is None:
        return None
    return workload_cpu_pct - gpu_process_cpu_pct


def beside_main_thread(
    gpu_process_cpu_pct: float | None, gpu_main_thread_pct: float | None, job_gpu_processes: float | None
) -> float | None:
    """The CPU (% of a core, per process) of the threads beside the main thread in the processes holding a GPU
    context, when the main thread waits (under MAIN_THREAD_WAITS) and they run on a core: another Python thread
    holds the interpreter lock the main thread needs to launch work, or makes its input. Else None."""
    main, on_gpu = gpu_main_thread_pct, gpu_process_cpu_pct
    if main is None or on_gpu is None or main >= MAIN_THREAD_WAITS.value:
        return None
    beside = on_gpu / max(1.0, job_gpu_processes or 1.0) - main
    return beside if beside >= HOT_THREAD.value else None


def reads_back_or_saves(
    pcie_tx_mib_per_s: float | None, pcie_rx_mib_per_s: float | None, write_mb_per_s: float | None
) -> bool:
    """The host computes on what it reads back from the GPU, or saves to storage, while the GPU waits."""
    return reads_back(pcie_tx_mib_per_s, pcie_rx_mib_per_s) >= HOST_READS_BACK.value or saves_to_storage(write_mb_per_s)


def computes_in_threads(on_gpu_cpu_pct: float | None, job_gpu_processes: float | None) -> bool:
    """The processes holding a GPU context compute on several cores each (framework ops, numpy on CPU tensors)."""
    return (on_gpu_cpu_pct or 0.0) / max(1.0, job_gpu_processes or 1.0) >= HOST_PARALLEL_CPU.value


def host_work(evidence: Mapping[str, float]) -> bool:
    """A verdict's evidence shows the host_bound rules that come before a thread beside the main one (above)."""
    on_gpu = evidence.get("gpu_process_cpu_pct", evidence.get("workload_cpu_pct"))
    return reads_back_or_saves(
        evidence.get("pcie_tx_mib_per_s"), evidence.get("pcie_rx_mib_per_s"), evidence.get("write_mb_per_s")
    ) or computes_in_threads(on_gpu, evidence.get("job_gpu_processes"))


def beside_main(evidence: Mapping[str, float]) -> float | None:
    """`beside_main_thread` from a verdict's evidence."""
    return beside_main_thread(
        evidence.get("gpu_process_cpu_pct"), evidence.get("gpu_main_thread_pct"), evidence.get("job_gpu_processes")
    )


def helpers_busy(workload_cpu_pct: float | None, gpu_process_cpu_pct: float | None) -> bool:
    """The processes without a GPU context run on a core or more: they make the input the GPU waits for."""
    helpers = helpers_cpu(workload_cpu_pct, gpu_process_cpu_pct)
    return helpers is not None and helpers >= INPUT_HELPERS_CPU.value


def reads_back(pcie_tx_mib_per_s: float | None, pcie_rx_mib_per_s: float | None) -> float:
    """Device-to-host traffic (MiB/s) beyond what the host-to-device copies' read requests cause."""
    return max(0.0, (pcie_tx_mib_per_s or 0.0) - READ_REQUESTS.value * (pcie_rx_mib_per_s or 0.0))


def saves_to_storage(write_mb_per_s: float | None) -> bool:
    """The workload writes enough to storage that saving (checkpoints, dumps) is what the GPU waits on."""
    return (write_mb_per_s or 0.0) >= HOST_WRITES.value
