"""What the label rules read of one window (`Figures`), computed once per window from its samples' figures and the
GPU's unchanging facts: GPU-Util, SM activity, PCIe RX, the power share, the NVLink share, whether the allocator
makes the GPU wait, whether a collective may be out of sight, whether the kernels that run are small."""

from __future__ import annotations

from dataclasses import dataclass

from gputriage.diagnosis.run.host_side import helpers_busy
from gputriage.diagnosis.run.label_thresholds import (
    ALLOC_CHURN,
    COPY_TIME_SHARE,
    CUDA_MATH_BUSY,
    DRAM_BUSY,
    DRAM_MIXED,
    LARGE_KERNEL_POWER_PER_UTIL,
    MULTI_GPU_JOB,
    NVLINK_BUSY,
    PINNED_LINK_SHARE,
    SM_GAPS_PER_UTIL,
    SMALL_KERNEL_OCC_PER_UTIL,
    SMALL_KERNEL_POWER_PER_UTIL,
    SMALL_KERNEL_SM_PER_UTIL,
    TENSOR_IDLE,
)
from gputriage.diagnosis.thresholds import IDLE_SM, IDLE_UTIL, UNDERFILLED_UTIL, VRAM_PRESSURE
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.run import GpuStatic
from gputriage.model.specs import pcie_link_gbs
from gputriage.model.window import WindowMetrics

MIB_PER_MB = 2**20 / 1e6  # a MiB in MB: a unit conversion


@dataclass(slots=True)
class Figures:
    """One window as the label rules read it (`figures_of`)."""

    m: WindowMetrics  # the window's own figures
    gpu: GpuStatic
    util: float  # GPU-Util, % (0 where not read)
    sm: float | None  # SM activity, % (None: no GPM)
    gpm: bool  # the GPU's GPM metrics were read (SM activity, tensor pipes, DRAM)
    sm_or_util: float  # SM activity, or GPU-Util where GPM is not read
    rx: float  # PCIe RX, MiB/s (0 where not read)
    pressure: bool | None  # the GPU waits on the allocator (None: it may, `allocator_pressure`)
    link: float | None  # NVLink share of the links' capacity (None: not counted)
    unseen: tuple[B, ...]  # (comm_bound,) on a job on several GPUs whose links are not counted
    power: float | None  # power drawn as a share of the enforced limit
    copying: float | None  # the least share of the time host-to-device copies run (None: link unknown)
    small: bool | None  # the kernels that run are small (None: cannot tell)

    @property
    def links_busy(self) -> bool:
        return self.link is not None and self.link >= NVLINK_BUSY.value


def figures_of(m: WindowMetrics, gpu: GpuStatic) -> Figures:
    """What the label rules read of window `m` of a GPU whose unchanging facts are `gpu`."""
    util = m.util_pct if m.util_pct is not None else 0.0
    sm = m.sm_active_pct
    rx = m.pcie_rx_mib_per_s or 0.0
    link = nvlink_share(m, gpu)
    power = power_share(m, gpu)
    several = link is None and (m.job_gpus or 0.0) >= MULTI_GPU_JOB.value
    return Figures(
        m=m,
        gpu=gpu,
        util=util,
        sm=sm,
        gpm=sm is not None,
        sm_or_util=sm if sm is not None else util,
        rx=rx,
        pressure=allocator_pressure(m, gpu, util),
        link=link,
        unseen=(B.comm_bound,) if several else (),
        power=power,
        copying=copy_time_share(rx, gpu),
        small=small_kernels(sm, m.sm_occupancy_pct, util) if sm is not None else small_by_power(power, util),
    )


def small_kernels(sm: float, occupancy: float | None, util: float) -> bool:
    """With GPM: while a kernel runs, it covers under half the SMs, or holds few warps."""
    return sm < SMALL_KERNEL_SM_PER_UTIL.value * util or (
        occupancy is not None and occupancy < SMALL_KERNEL_OCC_PER_UTIL.value * util
    )


def small_by_power(power: float | None, util: float) -> bool | None:
    """Without GPM: small kernels draw little power for the time they run (None: between the two ratios, a lightly
    used GPU's idle power hides which)."""
    ratio = power / (util / 100.0) if power is not None and util > 0 else None
    lo, hi = SMALL_KERNEL_POWER_PER_UTIL.value, LARGE_KERNEL_POWER_PER_UTIL.value
    return None if ratio is None or lo <= ratio < hi else ratio < lo


def allocator_pressure(m: WindowMetrics, gpu: GpuStatic, util: float) -> bool | None:
    """True: the GPU waits on the allocator — it gives memory back to the driver (where the workload reports it),
    or VRAM is full (where it does not), and GPM does not see the SMs saturated; None: it may (a full GPU, no
    allocator report, no GPM to see gaps, GPU-Util high); False: no sign of it."""
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


def copies_explain(f: Figures) -> bool:
    """Copies can be what an idle GPU waits on — unless input workers (processes without a GPU context) are busy
    while the copies take under COPY_TIME_SHARE of the time: pinned batches cross the link in a few ms, and the
    GPU waits for the workers that make them."""
    return (
        f.copying is None
        or f.copying >= COPY_TIME_SHARE.value
        or not helpers_busy(f.m.workload_cpu_pct, f.m.gpu_process_cpu_pct)
    )


def copy_time_share(rx_mib_per_s: float, gpu: GpuStatic) -> float | None:
    """The least share of the time host-to-device copies run: PCIe RX against what pinned copies reach on the
    link (None: the link is not known)."""
    if not gpu.pcie_gen_max or not gpu.pcie_width_max:
        return None
    link_gbs = pcie_link_gbs(gpu.pcie_gen_max, gpu.pcie_width_max)
    return rx_mib_per_s * MIB_PER_MB / 1000.0 / (PINNED_LINK_SHARE.value * link_gbs) if link_gbs else None


def nvlink_share(m: WindowMetrics, gpu: GpuStatic) -> float | None:
    """NVLink payload in the busier direction as a share of the links' capacity (None: not counted)."""
    rates = [r for r in (m.nvlink_tx_mib_per_s, m.nvlink_rx_mib_per_s) if r is not None]
    if not rates or not gpu.nvlink_links or not gpu.nvlink_link_mb_per_s:
        return None
    return max(rates) * MIB_PER_MB / (gpu.nvlink_links * gpu.nvlink_link_mb_per_s)


def power_share(m: WindowMetrics, gpu: GpuStatic) -> float | None:
    """The power the GPU draws as a share of its enforced limit: how much of the chip works."""
    if m.power_w is None or not gpu.power_limit_mw:
        return None
    return 1000.0 * m.power_w / gpu.power_limit_mw


def computes(util_pct: float | None, sm_active_pct: float | None) -> bool:
    """The GPU ran work (GPU-Util or SM activity above idle)."""
    return (util_pct or 0.0) >= IDLE_UTIL.value or (sm_active_pct or 0.0) >= IDLE_SM.value


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
