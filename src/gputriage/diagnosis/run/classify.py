"""Name the bottleneck of one window of samples (the sampler's rules).

Samples are cut into windows (1 s by default, `monitor.windows`); each window gets one label from the Bottleneck
vocabulary by the rules below, evaluated in order; consecutive windows with the same label form a regime
(`diagnosis.run.verdict`). Thresholds: the constants below, each with its meaning and source (`gputriage rules`).

What each label rests on (GPM = NVML GPU Performance Monitoring, Hopper and newer):
- idle: GPU-Util < 5% and SM activity < 5%, and the workload's CPU < 20% of a core (without
  process data: GPU-Util < 1%).
- contended: another process has memory on the same GPU while it is busy, or two of the workload's
  own processes run kernels on it (NVML per-process utilization).
- vram_pressure: the GPU waits on PyTorch's caching allocator. Where the workload reports its allocator
  (`gputriage.inworkload.allocator_counters`: Python workloads under `run`), it gives memory back to the driver
  >= 1 cudaFree a second (`empty_cache()` in the loop, allocations retried near out-of-memory), whatever VRAM
  holds; a full GPU whose allocator stays still (a KV-cache pool taken at start) is no pressure. Where it does
  not report, memory used >= 95% of the GPU's total. Either way not while GPM sees the GPU saturated (GPU-Util
  >= 90%, SM activity >= 0.8 x GPU-Util). Without GPM, a full GPU at GPU-Util >= 90% with no allocator report
  is judged by the rules below with vram_pressure left possible (GPU-Util cannot see a cudaFree's gaps).
- throttled: a thermal or hardware slowdown reason in >= 30% of the window's samples, or the
  power cap active at a limit lowered below 90% of the default.
- comm_bound: NVLink carries >= 20% of the links' capacity (the busier direction) while the tensor
  pipes are under 30% (or not counted): the GPUs exchange data (all-reduce, all-gather) more than they
  compute. Whether computation overlaps it shows only in a trace. With the tensor pipes busy, the
  verdict is compute_bound with comm_bound possible. On a job holding contexts on two GPUs or more
  whose links are not counted (PCIe, the network, GPUs without NVLink counters), a collective is out
  of sight: every label below that its kernels could make without tensor-core math (underfilled,
  memory_bound, tensor_cores_idle, compute_bound on CUDA cores) keeps comm_bound possible.
- h2d_copy_bound: GPU mostly idle (SM < 30%) while PCIe RX >= 2000 MiB/s — unless input workers run
  on a core or more while the copies take under a quarter of the time (pinned batches from a
  DataLoader: the GPU waits for the workers, below).
- h2d_copy_bound, underfilled possible: SM activity < 50% while PCIe RX says copies run >= 25% of the
  time (against 85% of the link's raw rate, what pinned copies reach): copies that take turns with the
  kernels on one stream leave the SMs idle while GPU-Util reads 100%.
- underfilled: GPU-Util >= 90% but SM activity < 50%: a kernel always runs, but it covers few SMs.
- Without GPM (GPUs before Hopper, `--no-gpm`), how much of the chip works shows in the power it
  draws against its limit: h2d_copy_bound when PCIe RX >= 2000 MiB/s with the GPU drawing under
  35% of its limit (or GPU-Util < 30%); underfilled at GPU-Util >= 90% under 35% of the limit;
  kernels are small when the power share is under 0.6 x GPU-Util, not from 0.9 x (between, a lightly used
  GPU's idle power hides which); memory_bound when nvidia-smi's
  memory util >= 80%; compute_bound otherwise, where tensor cores cannot be told from CUDA cores
  (tensor_cores_idle stays possible: `run --profile` tells), and copies taking turns with the kernels
  neither (h2d_copy_bound stays possible where PCIe RX says copies run >= 25% of the time).
- The GPU idles a quarter of the time or more (GPU-Util < 75%): the host does not keep it fed.
  Which host-side cause, from what the counters can tell apart:
  - input_starved, certain, when iowait >= 10%.
  - Where the workload is Python run by `run` (or `monitor()`'s block), from where its main thread spent the
    window (the stack sampler, >= 20 samples, or 10 where one category holds 80%): its top category names it —
    waiting for input (a queue, a socket, sleep; a DataLoader) input_starved; computing on the host
    input_starved (it makes its batches: lists, tokens, augmentation), or host_bound where it reads results
    back from the GPU (PCIe TX, below), saves to storage, or computes on several cores; waiting on the GPU
    (.item(), synchronize) sync_bound, or host_bound where it reads results back; copying (.to, .cuda,
    copy_, pinning) h2d_copy_bound; compiling or collecting garbage host_bound; launching (inside torch's
    ops) launch_bound, or host_bound where the GPU ran no kernel (torch's own Python, CPU tensors). A category
    within 0.6 of the first (and >= 20% of the time) stays possible. Left to
    the rules below when a Python thread beside it works (>= 0.85 threads on average: the interpreter lock,
    a server's launching thread) while it waits, computes or launches, and when it launches kernels that
    fill the GPU. Where it waits for input from outside the process (not a DataLoader, nothing busy
    beside it, little read), the run says so (`run.input_rate_bound`): the input rate is the limit.
  Without stack samples (a workload that is not Python, `watch`, the exporter):
  - host_bound, when the workload reads under 20 MB/s: it computes on the host while the GPU
    waits. It reads >= 100 MiB/s back from the GPU (PCIe TX beyond a tenth of PCIe RX, which the
    copies to the GPU cause by themselves: activations or parameters copied to the host each step),
    or writes >= 100 MB/s to storage (checkpoints saved from the loop), or its processes holding a
    GPU context run on >= 2.5 cores each (framework ops and numpy on CPU tensors use several
    threads; a launching or syncing thread is one; without per-process figures, the whole tree's
    CPU per such process).
    Possible: sync_bound (a read is a sync), input_starved (in-memory producers).
  - launch_bound: one workload thread >= 85% busy (or each process on the GPU at >= 85% of a core,
    split between threads: a training loop launches its backward from autograd's own thread) and,
    while a kernel runs, it covers under half the SMs (SM activity < 0.5 x GPU-Util) or holds few
    warps (SM occupancy < 0.08 x GPU-Util): kernels too short to cover their launch. The host is busy
    launching them; an input pipeline or a sync remain possible. Before that: input_starved, certain,
    when the main thread of the processes on the GPU waits (under 50% of a core) while their input
    workers run on a core or more, whatever thread runs beside it (a DataLoader's pin-memory thread).
  Otherwise (kernels that fill the GPU while they run, or no busy thread):
  - input_starved when its processes without a GPU context (DataLoader workers, preprocessing
    helpers) run on a core or more: they make the input the GPU waits for (sync_bound possible only
    when the processes on the GPU spin at 85% or more: a sync spins, a wait for the workers sleeps);
  - host_bound when a thread beside the main thread of a process holding a GPU context runs on a core while
    the main thread runs under 50%: Python threads share one interpreter lock, which the main thread needs
    to launch work, and a busy Python thread (metrics, logging, a web framework, making the input) holds it;
    the advice is the same either way (move that work to a process). A trace sees only the launching
    thread waiting outside framework ops (input_starved to it): it does not override this;
  - input_starved when the workload reads >= 20 MB/s (files, pipes, sockets: it loads input while
    the GPU waits); without process data, when GPU-Util < 30%; with a workload thread >= 85% busy
    while GPU-Util < 30%: a sync waits only as long as the GPU works, so a thread that busy with the
    GPU mostly idle makes the batches itself (augmentation on the training thread); host_bound and
    sync_bound stay possible;
  - sync_bound else: with nothing read, the host waits in synchronizations (or spins in one) and
    then works without the GPU.
  The last two look alike on every counter (a thread spinning in a sync is as busy as one decoding
  data), so each names the other as possible; `run --profile` tells them apart.
- compute_bound: SM activity >= 50% and tensor-pipe activity >= 30% (healthy on tensor cores). With SM
  activity under 0.8 x GPU-Util, the SMs idle a fifth of the time while GPU-Util says a kernel always
  runs: gaps finer than GPU-Util sees (the allocator, syncs) or kernels that cover part of the SMs, so
  underfilled stays possible (a trace shows which).
- memory_bound: SM activity >= 50% and DRAM bandwidth >= 60% of peak.
- tensor_cores_idle: SM activity >= 60%, tensor pipes < 5%, DRAM < 60%: math on CUDA cores — unless
  the non-tensor math pipes (FP64/FP32/FP16, GPM) are counted and under 20%: then the SMs hold warps
  that compute on nothing, waiting on memory latency (scattered reads: gathers, embedding lookups),
  memory_bound although DRAM bandwidth is not the limit.
- compute_bound (CUDA cores): SM activity >= 50% otherwise; memory_bound stays possible where the tensor pipes work
  (>= 5%) and DRAM streams (>= 30% of peak) while the other math pipes rest (< 20%): GEMMs take turns with memory-bound
  kernels (unfused elementwise chains), and which of them takes more of the time shows only in a trace.
"""

from __future__ import annotations

from gputriage.diagnosis.run.host_side import (
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
    STACK_RULES,
    helpers_busy,
    host_side,
)
from gputriage.diagnosis.run.label_thresholds import (
    ALLOC_CHURN,
    COPY_TIME_SHARE,
    CUDA_MATH_BUSY,
    DRAM_BUSY,
    DRAM_MIXED,
    HOST_BOUND_UTIL,
    IDLE_WORKLOAD_CPU,
    LARGE_KERNEL_POWER_PER_UTIL,
    LIGHT_POWER,
    MEM_UTIL_BUSY,
    NVLINK_BUSY,
    PCIE_RX_BUSY,
    PINNED_LINK_SHARE,
    SM_BUSY,
    SM_GAPS_PER_UTIL,
    SM_IDLE,
    SM_LOW,
    SMALL_KERNEL_OCC_PER_UTIL,
    SMALL_KERNEL_POWER_PER_UTIL,
    SMALL_KERNEL_SM_PER_UTIL,
    TENSOR_IDLE,
    THROTTLED_SHARE,
)
from gputriage.diagnosis.thresholds import (
    IDLE_SM,
    IDLE_UTIL,
    IOWAIT,
    POWER_LIMIT_LOWERED,
    TENSOR_BUSY,
    UNDERFILLED_SM,
    UNDERFILLED_UTIL,
    VRAM_PRESSURE,
)
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Threshold
from gputriage.model.run import GpuStatic
from gputriage.model.specs import pcie_link_gbs
from gputriage.model.window import WindowMetrics


def waits_on_latency(dram_active_pct: float | None, cuda_math_active_pct: float | None) -> bool:
    """Busy SMs that compute on no pipe while DRAM is under its busy share: warps wait on scattered reads."""
    return (
        dram_active_pct is not None
        and dram_active_pct < DRAM_BUSY.value
        and cuda_math_active_pct is not None
        and cuda_math_active_pct < CUDA_MATH_BUSY.value
    )


def takes_turns(tensor_pct: float | None, dram_pct: float | None, cuda_math_pct: float | None) -> bool:
    """Tensor pipes at work, DRAM streaming, the other math pipes quiet: GEMMs take turns with memory-bound kernels."""
    if tensor_pct is None or dram_pct is None:
        return False
    quiet = (cuda_math_pct or 0.0) < CUDA_MATH_BUSY.value
    return tensor_pct >= TENSOR_IDLE.value and dram_pct >= DRAM_MIXED.value and quiet


def computes(util_pct: float | None, sm_active_pct: float | None) -> bool:
    """The GPU ran work (GPU-Util or SM activity above idle)."""
    return (util_pct or 0.0) >= IDLE_UTIL.value or (sm_active_pct or 0.0) >= IDLE_SM.value


def label(m: WindowMetrics, gpu: GpuStatic) -> tuple[B, list[B]]:
    """The window's bottleneck, and the others the counters cannot rule out."""
    util, sm = m.util_pct, m.sm_active_pct
    busy_util = util if util is not None else 0.0
    sm_v = sm if sm is not None else busy_util  # without GPM, GPU-Util is all there is
    rx = m.pcie_rx_mib_per_s or 0.0
    cpu = m.workload_cpu_pct
    if (
        busy_util < IDLE_UTIL.value
        and sm_v < IDLE_SM.value
        and (cpu is None or cpu < IDLE_WORKLOAD_CPU.value)
        and rx < PCIE_RX_BUSY.value
        and (cpu is not None or busy_util < 1.0)
    ):
        return B.idle, []
    if (m.neighbours or (m.job_computing or 0) >= 2) and busy_util >= IDLE_UTIL.value:
        return B.contended, []
    pressure = allocator_pressure(m, gpu, busy_util)
    if pressure is True:
        return B.vram_pressure, []
    b, possible = _after_vram(m, gpu, busy_util)
    return b, [*possible, B.vram_pressure] if pressure is None else possible


def allocator_pressure(m: WindowMetrics, gpu: GpuStatic, util: float) -> bool | None:
    """True: the GPU waits on the allocator (see the module doc); None: it may (a full GPU, no allocator report,
    no GPM to see gaps); False: no sign of it."""
    total = gpu.memory_total_bytes
    full = bool(total and m.used_bytes and 100.0 * m.used_bytes / total >= VRAM_PRESSURE.value)
    known = m.cuda_frees_per_s is not None
    churn = known and (m.cuda_frees_per_s or 0.0) >= ALLOC_CHURN.value
    if not churn and not (full and not known):
        return False
    sm = m.sm_active_pct
    if util >= UNDERFILLED_UTIL.value and sm is not None and sm >= SM_GAPS_PER_UTIL.value * util:
        return False  # GPM sees no gaps: the SMs do not wait on it
    if churn or sm is not None or util < UNDERFILLED_UTIL.value:
        return True
    return None


def _after_vram(m: WindowMetrics, gpu: GpuStatic, busy_util: float) -> tuple[B, list[B]]:
    """The rules after vram_pressure, in order (see the module doc)."""
    sm = m.sm_active_pct
    sm_v = sm if sm is not None else busy_util
    rx = m.pcie_rx_mib_per_s or 0.0
    if (m.throttled_share or 0.0) >= THROTTLED_SHARE.value:
        return B.throttled, []
    limit, default = gpu.power_limit_mw, gpu.power_default_mw
    if (
        (m.power_capped_share or 0.0) >= THROTTLED_SHARE.value
        and limit
        and default
        and 100.0 * limit / default < POWER_LIMIT_LOWERED.value
    ):
        return B.throttled, []
    link = nvlink_share(m, gpu)
    links_busy = link is not None and link >= NVLINK_BUSY.value
    tensor, dram = m.tensor_active_pct, m.dram_active_pct
    if links_busy and (tensor is None or tensor < TENSOR_BUSY.value):
        return B.comm_bound, []
    # a job on several GPUs whose links are not counted: what the SMs run may be its collectives
    unseen = [B.comm_bound] if link is None and (m.job_gpus or 0.0) >= 2 else []
    if sm is None:
        return _without_gpm(m, gpu, busy_util, rx, power_share(m, gpu), unseen)
    if sm < SM_IDLE.value and rx >= PCIE_RX_BUSY.value and copies_explain(m, gpu, rx):
        return B.h2d_copy_bound, []
    copying = copy_time_share(rx, gpu)
    if sm < UNDERFILLED_SM.value and copying is not None and copying >= COPY_TIME_SHARE.value:
        return B.h2d_copy_bound, [B.underfilled]  # the SMs idle while copies take turns with the kernels
    if sm < UNDERFILLED_SM.value and busy_util >= UNDERFILLED_UTIL.value:
        return B.underfilled, unseen
    if busy_util < HOST_BOUND_UTIL.value:
        occupancy = m.sm_occupancy_pct
        small = sm < SMALL_KERNEL_SM_PER_UTIL.value * busy_util or (
            occupancy is not None and occupancy < SMALL_KERNEL_OCC_PER_UTIL.value * busy_util
        )
        return host_side(m, busy_util, small=small)
    if tensor is not None and tensor >= TENSOR_BUSY.value:
        gaps = [B.underfilled] if sm < SM_GAPS_PER_UTIL.value * busy_util else []
        return B.compute_bound, [*gaps, B.comm_bound] if links_busy else gaps
    if dram is not None and dram >= DRAM_BUSY.value:
        return B.memory_bound, unseen
    if tensor is not None and tensor < TENSOR_IDLE.value and sm_v >= SM_BUSY.value:
        if waits_on_latency(dram, m.cuda_math_active_pct):  # warps that compute on nothing
            return B.memory_bound, unseen
        return B.tensor_cores_idle, unseen
    if takes_turns(tensor, dram, m.cuda_math_active_pct):
        return B.compute_bound, [B.memory_bound, *unseen]  # GEMMs and memory-bound kernels take turns: a trace tells
    return B.compute_bound, unseen


def copies_explain(m: WindowMetrics, gpu: GpuStatic, rx_mib_per_s: float) -> bool:
    """Copies can be what an idle GPU waits on — unless input workers (processes without a GPU context) are busy
    while the copies take under COPY_TIME_SHARE of the time: pinned batches cross the link in a few ms, and the
    GPU waits for the workers that make them."""
    share = copy_time_share(rx_mib_per_s, gpu)
    return (
        share is None or share >= COPY_TIME_SHARE.value or not helpers_busy(m.workload_cpu_pct, m.gpu_process_cpu_pct)
    )


def copy_time_share(rx_mib_per_s: float, gpu: GpuStatic) -> float | None:
    """The least share of the time host-to-device copies run: PCIe RX against what pinned copies reach on the
    link (None: the link is not known)."""
    if not gpu.pcie_gen_max or not gpu.pcie_width_max:
        return None
    link_gbs = pcie_link_gbs(gpu.pcie_gen_max, gpu.pcie_width_max)
    return rx_mib_per_s * 1.048576 / 1000.0 / (PINNED_LINK_SHARE * link_gbs) if link_gbs else None


def nvlink_share(m: WindowMetrics, gpu: GpuStatic) -> float | None:
    """NVLink payload in the busier direction as a share of the links' capacity (None: not counted)."""
    rates = [r for r in (m.nvlink_tx_mib_per_s, m.nvlink_rx_mib_per_s) if r is not None]
    if not rates or not gpu.nvlink_links or not gpu.nvlink_link_mb_per_s:
        return None
    return max(rates) * 1.048576 / (gpu.nvlink_links * gpu.nvlink_link_mb_per_s)


def power_share(m: WindowMetrics, gpu: GpuStatic) -> float | None:
    """The power the GPU draws as a share of its enforced limit: how much of the chip works."""
    if m.power_w is None or not gpu.power_limit_mw:
        return None
    return 1000.0 * m.power_w / gpu.power_limit_mw


def _without_gpm(
    m: WindowMetrics, gpu: GpuStatic, util: float, rx: float, power: float | None, unseen: list[B]
) -> tuple[B, list[B]]:
    """Before Hopper (no GPM), how much of the chip works shows in the power it draws against its limit;
    PCIe traffic comes from the PCIe counters; tensor cores cannot be told from CUDA cores. `unseen`:
    [comm_bound] on a job on several GPUs whose links are not counted."""
    light = power is not None and power < LIGHT_POWER.value
    if rx >= PCIE_RX_BUSY.value and (light or util < GPU_MOSTLY_IDLE_UTIL.value) and copies_explain(m, gpu, rx):
        return B.h2d_copy_bound, []
    if util >= UNDERFILLED_UTIL.value and light:
        return B.underfilled, unseen
    if util < HOST_BOUND_UTIL.value:
        ratio = power / (util / 100.0) if power is not None and util > 0 else None
        lo, hi = SMALL_KERNEL_POWER_PER_UTIL.value, LARGE_KERNEL_POWER_PER_UTIL.value
        small = None if ratio is None or lo <= ratio < hi else ratio < lo
        return host_side(m, util, small)
    if (m.mem_util_pct or 0.0) >= MEM_UTIL_BUSY.value:
        return B.memory_bound, unseen
    copying = [B.h2d_copy_bound] if (copy_time_share(rx, gpu) or 0.0) >= COPY_TIME_SHARE.value else []
    if power is None:
        return B.compute_bound, [B.memory_bound, B.tensor_cores_idle, B.underfilled, *copying, *unseen]
    return B.compute_bound, [B.tensor_cores_idle, *copying, *unseen]


# the thresholds each label rests on, for the catalog
LABEL_THRESHOLDS: dict[B, tuple[Threshold, ...]] = {
    B.idle: (IDLE_UTIL, IDLE_SM, IDLE_WORKLOAD_CPU),
    B.contended: (IDLE_UTIL,),
    B.vram_pressure: (ALLOC_CHURN, VRAM_PRESSURE, UNDERFILLED_UTIL, SM_GAPS_PER_UTIL),
    B.throttled: (THROTTLED_SHARE, POWER_LIMIT_LOWERED),
    B.h2d_copy_bound: (SM_IDLE, PCIE_RX_BUSY, COPY_TIME_SHARE, *STACK_RULES),
    B.underfilled: (UNDERFILLED_UTIL, UNDERFILLED_SM, LIGHT_POWER),
    B.input_starved: (
        HOST_BOUND_UTIL,
        IOWAIT,
        *STACK_RULES,
        OTHERS_BUSY,
        INPUT_READ,
        INPUT_HELPERS_CPU,
        GPU_MOSTLY_IDLE_UTIL,
        HOT_THREAD,
    ),
    B.launch_bound: (
        HOST_BOUND_UTIL,
        *STACK_RULES,
        OTHERS_BUSY,
        HOT_THREAD,
        SMALL_KERNEL_SM_PER_UTIL,
        SMALL_KERNEL_OCC_PER_UTIL,
        SMALL_KERNEL_POWER_PER_UTIL,
        LARGE_KERNEL_POWER_PER_UTIL,
    ),
    B.sync_bound: (HOST_BOUND_UTIL, *STACK_RULES, INPUT_READ),
    B.host_bound: (
        HOST_BOUND_UTIL,
        *STACK_RULES,
        OTHERS_BUSY,
        HOST_READS_BACK,
        READ_REQUESTS,
        HOST_WRITES,
        HOST_PARALLEL_CPU,
        INPUT_READ,
        MAIN_THREAD_WAITS,
        HOT_THREAD,
    ),
    B.compute_bound: (SM_LOW, TENSOR_BUSY, SM_GAPS_PER_UTIL, DRAM_MIXED),
    B.memory_bound: (SM_LOW, DRAM_BUSY, MEM_UTIL_BUSY, CUDA_MATH_BUSY),
    B.tensor_cores_idle: (SM_BUSY, TENSOR_IDLE, DRAM_BUSY, CUDA_MATH_BUSY),
    B.comm_bound: (NVLINK_BUSY, TENSOR_BUSY),
}
# what a label needs to be seen at all
LABEL_NEEDS: dict[B, tuple[str, ...]] = {
    B.idle: ("gpu",),
    B.contended: ("gpu",),
    B.vram_pressure: ("gpu",),
    B.throttled: ("gpu",),
    B.h2d_copy_bound: ("gpu",),
    B.underfilled: ("gpu",),
    B.input_starved: ("gpu", "workload"),
    B.launch_bound: ("gpu", "workload"),
    B.sync_bound: ("gpu", "workload"),
    B.host_bound: ("gpu", "workload"),
    B.compute_bound: ("gpu",),
    B.memory_bound: ("gpu",),
    B.tensor_cores_idle: ("gpu", "gpm"),
    B.comm_bound: ("gpu", "nvlink"),
}
