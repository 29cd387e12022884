"""The host-side label rules, in the order they are evaluated: which host-side cause keeps the GPU waiting in a
window whose GPU idles a quarter of the time or more (the `host side` rule of `diagnosis.run.labels`). The first
that applies names the label; the last always does."""

from __future__ import annotations

from gputriage.diagnosis.run.host_side import (
    CLEAR_SHARE,
    CLOSE_MIN_SHARE,
    CLOSE_SHARE,
    GPU_MOSTLY_IDLE_UTIL,
    HOST_PARALLEL_CPU,
    HOST_READS_BACK,
    HOST_WRITES,
    HOT_THREAD,
    INPUT_HELPERS_CPU,
    INPUT_READ,
    MAIN_THREAD_WAITS,
    OTHERS_BUSY,
    READ_REQUESTS,
    STACK_SAMPLES,
    STACK_SAMPLES_CLEAR,
    STEP_READS,
    beside_main_thread,
    computes_in_threads,
    from_stacks,
    helpers_busy,
    reads_back_or_saves,
)
from gputriage.diagnosis.run.label_rule import LabelRule
from gputriage.diagnosis.run.label_thresholds import (
    LARGE_KERNEL_POWER_PER_UTIL,
    SMALL_KERNEL_OCC_PER_UTIL,
    SMALL_KERNEL_POWER_PER_UTIL,
    SMALL_KERNEL_SM_PER_UTIL,
)
from gputriage.diagnosis.run.window_figures import Figures
from gputriage.diagnosis.thresholds import IOWAIT
from gputriage.model.bottleneck import Bottleneck as B


def _hot(f: Figures) -> bool:
    """A thread of the workload is saturated."""
    return (f.m.top_thread_pct or 0.0) >= HOT_THREAD.value


def _launch(f: Figures) -> list[B]:
    """launch_bound stays possible where a thread is saturated and the kernels' size cannot be told."""
    return [B.launch_bound] if _hot(f) and f.small is None else []


def _reads_little(f: Figures) -> bool:
    return f.m.read_mb_per_s is None or f.m.read_mb_per_s < INPUT_READ.value


def _per_gpu_process(cpu_pct: float | None, f: Figures) -> float:
    return (cpu_pct or 0.0) / max(1.0, f.m.job_gpu_processes or 1.0)


def _main_waits(f: Figures) -> bool:
    return f.m.gpu_main_thread_pct is not None and f.m.gpu_main_thread_pct < MAIN_THREAD_WAITS.value


def _helpers_busy(f: Figures) -> bool:
    return helpers_busy(f.m.workload_cpu_pct, f.m.gpu_process_cpu_pct)


def _launching(f: Figures) -> bool:
    """A thread saturated, or each process on the GPU at a core split between threads (a training loop launches
    its backward from autograd's own thread)."""
    return _hot(f) or _per_gpu_process(f.m.gpu_process_cpu_pct, f) >= HOT_THREAD.value


def _computes_in_threads(f: Figures) -> bool:
    on_gpu = f.m.gpu_process_cpu_pct if f.m.gpu_process_cpu_pct is not None else f.m.workload_cpu_pct
    return computes_in_threads(on_gpu, f.m.job_gpu_processes)


HOST_RULES: tuple[LabelRule, ...] = (
    LabelRule(
        B.input_starved,
        "when iowait reaches {iowait_pct:g}%: storage holds the input back",
        (IOWAIT,),
        when=lambda f: (f.m.iowait_pct or 0.0) >= IOWAIT.value,
    ),
    LabelRule(
        None,
        "where the workload is Python run by `run` (or `monitor()`'s block), from where its main thread spent the "
        "window (the stack sampler: {stack_min_samples:g} samples or more, or {stack_min_samples_clear:g} where one "
        "category holds {stack_clear_share:.0%} of them). Its top category names the cause: waiting for input (a "
        "queue, a socket, sleep; a DataLoader) **input_starved**; computing on the host **input_starved** (it makes "
        "its batches), **sync_bound** where it also waits on the GPU {main_thread_gpu_wait_share:.0%} of the time or "
        "more (a result read every step: the queue drains, and the GPU idles while the host works after the read), "
        "or **host_bound** where it reads results back from the GPU ({host_reads_back_mib_per_s:g} "
        "MiB/s of PCIe TX or more beyond {pcie_read_request_share:.0%} of PCIe RX, the copies' own read requests), "
        "writes {host_writes_mb_per_s:g} MB/s or more to storage, or runs on {host_compute_cpu_pct:g}% of a core per "
        "GPU process; waiting on the GPU (`.item()`, synchronize) **sync_bound**, or **host_bound** where it reads "
        "results back; copying (`.to`, `.cuda`, pinning) **h2d_copy_bound**; compiling or collecting garbage "
        "**host_bound**; launching (inside torch's ops, or another GPU library's: CuPy, JAX, Triton, numba, ONNX "
        "Runtime on a GPU provider), or running a training framework's loop (Lightning's, the Trainer's hooks, "
        "callbacks and logging: counted with the launches, never as input) **launch_bound**, or **host_bound** where "
        "the GPU ran no kernel (CPU tensors, torch's own Python); running a library's ops on the CPU (ONNX Runtime's "
        "CPU provider, JAX on its CPU backend) **host_bound**. A category at {stack_close_share:.0%} of the first's "
        "share or "
        "more (and {stack_close_min_share:.0%} of the time or more) stays possible. Left to the rules below where "
        "Python threads beside it work ({python_threads_busy:g} threads or more on average: the interpreter lock, "
        "a server's launching thread) while it waits, computes or launches, and where it launches kernels that "
        "fill the GPU",
        (
            STACK_SAMPLES,
            STACK_SAMPLES_CLEAR,
            CLEAR_SHARE,
            HOST_READS_BACK,
            READ_REQUESTS,
            HOST_WRITES,
            HOST_PARALLEL_CPU,
            STEP_READS,
            CLOSE_SHARE,
            CLOSE_MIN_SHARE,
            OTHERS_BUSY,
        ),
        title="the main thread's stacks",
        read=lambda f: from_stacks(f.m, f.util, f.small),
        names=(B.input_starved, B.host_bound, B.sync_bound, B.h2d_copy_bound, B.launch_bound),
        needs=("gpu", "workload"),
    ),
    LabelRule(
        B.host_bound,
        "when the workload reads under {input_read_mb_per_s:g} MB/s and reads results back from the GPU "
        "({host_reads_back_mib_per_s:g} MiB/s or more of PCIe TX beyond {pcie_read_request_share:.0%} of PCIe RX, "
        "the copies' own read requests) or writes {host_writes_mb_per_s:g} MB/s or more to storage (checkpoints "
        "saved from the loop); sync_bound stays possible (a read is a sync)",
        (INPUT_READ, HOST_READS_BACK, READ_REQUESTS, HOST_WRITES),
        when=lambda f: (
            _reads_little(f) and reads_back_or_saves(f.m.pcie_tx_mib_per_s, f.m.pcie_rx_mib_per_s, f.m.write_mb_per_s)
        ),
        possible=lambda f: [B.sync_bound, *_launch(f)],
    ),
    LabelRule(
        B.host_bound,
        "when the workload reads under {input_read_mb_per_s:g} MB/s and its processes holding a GPU context run on "
        "{host_compute_cpu_pct:g}% of a core each or more: it computes on the host in several threads (framework "
        "ops and numpy on CPU tensors; a launching or syncing thread is one); input_starved stays possible",
        (INPUT_READ, HOST_PARALLEL_CPU),
        when=lambda f: _reads_little(f) and _computes_in_threads(f),
        possible=lambda f: [B.input_starved, *_launch(f)],
    ),
    LabelRule(
        B.input_starved,
        "when the main thread of the processes on the GPU waits (under {main_thread_waits_pct:g}% of a core) while "
        "their input workers run on {input_helpers_cpu_pct:g}% of a core or more, whatever thread runs beside it",
        (MAIN_THREAD_WAITS, INPUT_HELPERS_CPU),
        when=lambda f: _main_waits(f) and _helpers_busy(f),
    ),
    LabelRule(
        B.launch_bound,
        "when a thread of the workload runs at {hot_thread_pct:g}% of a core or more (or each process on the GPU "
        "does, split between threads: autograd launches the backward pass from a thread of its own) and the kernels "
        "are small: while they run, they cover under {small_kernel_sm_per_util:g} × GPU-Util of the SMs, or hold few "
        "warps (SM occupancy under {small_kernel_occupancy_per_util:g} × GPU-Util); without GPM, the GPU draws under "
        "{small_kernel_power_per_util:g} × GPU-Util of its power limit (from {large_kernel_power_per_util:g} × they "
        "are not small; between, a lightly used GPU's idle power hides which). An input pipeline or a sync stay "
        "possible",
        (
            HOT_THREAD,
            SMALL_KERNEL_SM_PER_UTIL,
            SMALL_KERNEL_OCC_PER_UTIL,
            SMALL_KERNEL_POWER_PER_UTIL,
            LARGE_KERNEL_POWER_PER_UTIL,
        ),
        when=lambda f: _launching(f) and bool(f.small),
        possible=lambda f: [B.input_starved, B.sync_bound],
    ),
    LabelRule(
        B.input_starved,
        "when processes without a GPU context (DataLoader workers) run on {input_helpers_cpu_pct:g}% of a core or "
        "more: they make the input the GPU waits for (sync_bound stays possible where the processes on the GPU spin "
        "at {hot_thread_pct:g}% of a core or more: a sync spins, a wait for the workers sleeps)",
        (INPUT_HELPERS_CPU, HOT_THREAD),
        when=_helpers_busy,
        possible=lambda f: [B.sync_bound] if (f.m.gpu_process_cpu_pct or 0.0) >= HOT_THREAD.value else [],
    ),
    LabelRule(
        B.input_starved,
        "when the workload reads {input_read_mb_per_s:g} MB/s or more (files, pipes, sockets: it loads input while "
        "the GPU waits)",
        (INPUT_READ,),
        when=lambda f: not _reads_little(f),
        possible=lambda f: [B.sync_bound, *_launch(f)],
    ),
    LabelRule(
        B.host_bound,
        "when a thread beside the main thread of a process holding a GPU context runs at {hot_thread_pct:g}% of a "
        "core or more while the main thread runs under {main_thread_waits_pct:g}%: Python threads share one "
        "interpreter lock, which the main thread needs to launch work",
        (HOT_THREAD, MAIN_THREAD_WAITS),
        when=lambda f: (
            beside_main_thread(f.m.gpu_process_cpu_pct, f.m.gpu_main_thread_pct, f.m.job_gpu_processes) is not None
        ),
    ),
    LabelRule(
        B.input_starved,
        "without process data (a job gputriage did not start: `watch`), when GPU-Util is under "
        "{mostly_idle_util_pct:g}%: the GPU waits on the host, and what the host does there is out of sight "
        "(launch_bound, sync_bound and host_bound stay possible)",
        (GPU_MOSTLY_IDLE_UTIL,),
        when=lambda f: f.m.read_mb_per_s is None and f.util < GPU_MOSTLY_IDLE_UTIL.value,
        possible=lambda f: [B.launch_bound, B.sync_bound, B.host_bound],
        by_elimination=True,
    ),
    LabelRule(
        B.input_starved,
        "when a thread of the workload runs at {hot_thread_pct:g}% of a core or more while GPU-Util is under "
        "{mostly_idle_util_pct:g}%: a sync waits only as long as the GPU works, so a thread that busy with the GPU "
        "mostly idle makes the batches itself (augmentation on the training thread); host_bound and sync_bound stay "
        "possible",
        (HOT_THREAD, GPU_MOSTLY_IDLE_UTIL),
        when=lambda f: _hot(f) and f.util < GPU_MOSTLY_IDLE_UTIL.value,
        possible=lambda f: [B.host_bound, B.sync_bound, *_launch(f)],
        by_elimination=True,
    ),
    LabelRule(
        B.sync_bound,
        "otherwise (the workload reads under {input_read_mb_per_s:g} MB/s): the host waits in synchronizations (or "
        "spins in one) and then works without the GPU; input_starved stays possible",
        (INPUT_READ,),
        possible=lambda f: [B.input_starved, *_launch(f)],
        by_elimination=True,
    ),
)
