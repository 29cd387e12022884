"""The words of a GPU's verdict, and of each regime of its timeline: the figures that make the case for its
bottleneck (`describe`) and what to do (`decision_of`), from the medians of the windows it rests on."""

from __future__ import annotations

from typing import Callable, Mapping

from gputriage.diagnosis.bottlenecks import (
    COMPUTE_OFF_TENSOR_CORES,
    COMPUTE_TENSOR_UNCOUNTED,
    COMPUTE_WITH_MEMORY,
    DECISIONS,
    HOST_WRITES_DECISION,
    INPUT_WORKERS_DECISION,
    MEMORY_LATENCY,
    OTHER_THREAD_DECISION,
)
from gputriage.diagnosis.run.host_side import beside_main, helpers_busy, helpers_cpu, host_work, saves_to_storage
from gputriage.diagnosis.run.label_thresholds import JOB_SHARING
from gputriage.diagnosis.run.window_figures import takes_turns, waits_on_latency
from gputriage.diagnosis.thresholds import TENSOR_BUSY
from gputriage.model.bottleneck import Bottleneck as B

Figure = Callable[..., str]  # a figure of the evidence by name, with its unit ("n/a" where missing)


ELIMINATED = "named_by_elimination"  # `classify.ELIMINATED`: the evidence field of a verdict named by elimination
ELIMINATED_SAID = (
    "the GPU waits on the host, and nothing seen says what the host does there ({unseen}): named by elimination, "
    "what the counters leave once they rule the other causes out"
)
ELIMINATED_DECISION = (
    "First see what the host does between the GPU's work: `gputriage run -- python ...` samples the main thread's "
    "stacks, `--profile` traces the gaps. If it is {cause}: {decision}"
)


def decision_of(b: B, m: dict[str, float]) -> str:
    """What to do, by the figures: "tensor cores" only where counted busy; memory_bound under DRAM's peak is latency.
    A verdict named by elimination asks first to see what the host does."""
    decision = _decision(b, m)
    if m.get(ELIMINATED):
        return ELIMINATED_DECISION.format(cause=b.value, decision=decision[:1].lower() + decision[1:])
    return decision


def _decision(b: B, m: dict[str, float]) -> str:
    if b == B.memory_bound and waits_on_latency(m.get("dram_active_pct"), m.get("cuda_math_active_pct")):
        return MEMORY_LATENCY
    if b == B.host_bound and saves_to_storage(m.get("write_mb_per_s")):
        return HOST_WRITES_DECISION
    if b == B.host_bound and beside_main(m) is not None and not host_work(m):
        return OTHER_THREAD_DECISION
    if b == B.input_starved and helpers_busy(m.get("workload_cpu_pct"), m.get("gpu_process_cpu_pct")):
        return INPUT_WORKERS_DECISION
    if b != B.compute_bound:
        return DECISIONS[b]
    tensor = m.get("tensor_active_pct")
    if tensor is None:
        return COMPUTE_TENSOR_UNCOUNTED
    if tensor >= TENSOR_BUSY.value:
        return DECISIONS[b]
    mixed = takes_turns(tensor, m.get("dram_active_pct"), m.get("cuda_math_active_pct"))
    return COMPUTE_WITH_MEMORY if mixed else COMPUTE_OFF_TENSOR_CORES


def describe(b: B, m: dict[str, float]) -> str:
    """The figures that make the case for a bottleneck, in a sentence; a verdict named by elimination says so."""
    said = _described(b, m)
    if m.get(ELIMINATED):
        return f"{said}; {ELIMINATED_SAID.format(unseen=_unseen(m))}"
    return said


def _unseen(m: Mapping[str, float]) -> str:
    """Why what the host does was not seen."""
    if m.get("workload_cpu_pct") is None:
        return "the workload's processes were not sampled: a job gputriage did not start"
    if not m.get("host_stack_samples"):
        return "its main thread's stacks were not sampled (a workload that is not Python, or an older recording)"
    return "its main thread's stacks do not settle it"


def _described(b: B, m: dict[str, float]) -> str:

    def f(key: str, unit: str = "%") -> str:
        v = m.get(key)
        return "n/a" if v is None else f"{v:.0f}{unit}"

    if m.get("sm_active_pct") is None:  # without GPM: the power the GPU draws says how much of it works
        without = _without_gpm(f)
        if b in without:
            return without[b]
    case = _host_case(b, m, f)
    if case is not None:
        return case
    if b == B.memory_bound and waits_on_latency(m.get("dram_active_pct"), m.get("cuda_math_active_pct")):
        return (
            f"SM activity {f('sm_active_pct')} with the math pipes idle (CUDA cores "
            f"{f('cuda_math_active_pct')}, tensor {f('tensor_active_pct')}) and DRAM at {f('dram_active_pct')} "
            "of peak: warps wait on memory latency"
        )
    return {**_gpu_side(m, f), **_host_side(m, f)}.get(b, "")


def _without_gpm(f: Figure) -> dict[B, str]:
    power = f"{f('power_w', ' W')} ({f('power_pct_of_limit')} of its limit)"
    return {
        B.underfilled: f"GPU-Util {f('util_pct')} but the GPU draws {power}: most SMs idle",
        B.compute_bound: f"GPU-Util {f('util_pct')}, {power}, memory util {f('mem_util_pct')}",
        B.memory_bound: f"memory util {f('mem_util_pct')}, GPU-Util {f('util_pct')}, {power}",
        B.launch_bound: f"GPU-Util {f('util_pct')} at {power} (small kernels), one host thread at "
        f"{f('top_thread_pct')}",
        B.h2d_copy_bound: f"PCIe RX {f('pcie_rx_mib_per_s', ' MiB/s')} while the GPU draws {power}",
    }


def _host_case(b: B, m: Mapping[str, float], f: Figure) -> str | None:
    """input_starved on busy input workers; host_bound on a thread beside the main one (None: neither)."""
    if b == B.input_starved and helpers_busy(m.get("workload_cpu_pct"), m.get("gpu_process_cpu_pct")):
        helpers = helpers_cpu(m.get("workload_cpu_pct"), m.get("gpu_process_cpu_pct")) or 0.0
        return (
            f"GPU-Util {f('util_pct')} while the workload's processes without a GPU context (DataLoader workers) "
            f"run on {helpers:.0f}% of a core and it reads {f('read_mb_per_s', ' MB/s')} from files"
        )
    beside = beside_main(m) if b == B.host_bound and not host_work(m) else None
    if beside is None:
        return None
    return (
        f"GPU-Util {f('util_pct')} while a thread beside the main one runs at {beside:.0f}% of a core and "
        f"the main thread at {f('gpu_main_thread_pct')}: it holds the interpreter lock the launching thread "
        f"needs, or makes its input in the same process (the workload reads {f('read_mb_per_s', ' MB/s')} "
        "from files)"
    )


def _gpu_side(m: Mapping[str, float], f: Figure) -> dict[B, str]:
    return {
        B.underfilled: f"GPU-Util {f('util_pct')} but SM activity {f('sm_active_pct')}, occupancy "
        f"{f('sm_occupancy_pct')}",
        B.compute_bound: f"SM activity {f('sm_active_pct')}, tensor pipes {f('tensor_active_pct')}, "
        f"{f('power_w', ' W')}",
        B.memory_bound: f"DRAM bandwidth {f('dram_active_pct')} of peak, SM activity {f('sm_active_pct')}, "
        f"tensor pipes {f('tensor_active_pct')}",
        B.tensor_cores_idle: f"SM activity {f('sm_active_pct')} but tensor pipes {f('tensor_active_pct')}, "
        f"DRAM {f('dram_active_pct')}"
        + (f", CUDA-core math {f('cuda_math_active_pct')}" if "cuda_math_active_pct" in m else ""),
        B.h2d_copy_bound: f"PCIe RX {f('pcie_rx_mib_per_s', ' MiB/s')} while SM activity is {f('sm_active_pct')}",
        B.throttled: f"slowdown reasons in {m.get('throttled_share') or 0:.0%} of samples, SM clock "
        f"{f('sm_clock_mhz', ' MHz')}, {f('temperature_c', ' C')}",
        B.vram_pressure: (
            f"the allocator gives memory back {m['cuda_frees_per_s']:.0f} times a second (cudaFree), "
            f"{m.get('alloc_retries_per_s') or 0:.1f} allocations retried a second, "
            if m.get("cuda_frees_per_s") is not None
            else ""
        )
        + f"{(m.get('used_bytes') or 0) / 2**30:.1f} GiB of VRAM used",
        B.contended: (
            f"{m.get('job_computing', 0):.0f} processes of this job run kernels on the GPU at once"
            if m.get("job_computing", 0) >= JOB_SHARING.value
            else f"{m.get('neighbours', 0):.0f} other process(es) on the GPU"
        )
        + f", GPU-Util {f('util_pct')}",
        B.idle: f"GPU-Util {f('util_pct')}, SM activity {f('sm_active_pct')}, workload CPU {f('workload_cpu_pct')}",
    }


def _host_side(m: Mapping[str, float], f: Figure) -> dict[B, str]:
    return {
        B.input_starved: f"GPU-Util {f('util_pct')}, SM activity {f('sm_active_pct')} while one workload thread "
        f"runs at {f('top_thread_pct')}, the workload reads {f('read_mb_per_s', ' MB/s')} "
        f"(iowait {f('iowait_pct')})",
        B.launch_bound: f"GPU-Util {f('util_pct')} but SM activity {f('sm_active_pct')} (short kernels), one host "
        f"thread at {f('top_thread_pct')}",
        B.sync_bound: f"GPU-Util {f('util_pct')}, SM activity {f('sm_active_pct')}, busiest host thread "
        f"{f('top_thread_pct')}",
        B.host_bound: f"GPU-Util {f('util_pct')} while the workload computes on the host at "
        f"{f('workload_cpu_pct', '% of a core')} and reads {f('pcie_tx_mib_per_s', ' MiB/s')} back "
        f"from the GPU (PCIe TX), {f('read_mb_per_s', ' MB/s')} from files"
        + (
            f", and writes {f('write_mb_per_s', ' MB/s')} to storage"
            if saves_to_storage(m.get("write_mb_per_s"))
            else ""
        ),
    }
