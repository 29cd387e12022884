"""The window labels of `run`, `watch` and the exporter: one ordered list of rules (`LABEL_RULES`), each with its
thresholds; a window's label is named by the first that applies (`diagnosis.run.classify.label`). The catalog's
`run.<bottleneck>` entries (`VERDICT_SPECS`) and the numbered list of docs/verdicts.md (`markdown`,
`python -m gputriage.diagnosis.run.labels --markdown`) are made from it."""

from __future__ import annotations

import sys

from gputriage.diagnosis.bottlenecks import MEANINGS, severity_of
from gputriage.diagnosis.run.host_rules import HOST_RULES
from gputriage.diagnosis.run.host_side import GPU_MOSTLY_IDLE_UTIL, INPUT_HELPERS_CPU
from gputriage.diagnosis.run.label_rule import LabelRule
from gputriage.diagnosis.run.label_thresholds import (
    ALLOC_CHURN,
    COPY_TIME_SHARE,
    CUDA_MATH_BUSY,
    DRAM_BUSY,
    DRAM_MIXED,
    HOST_BOUND_UTIL,
    IDLE_UTIL_UNSAMPLED,
    IDLE_WORKLOAD_CPU,
    JOB_SHARING,
    LIGHT_POWER,
    MEM_UTIL_BUSY,
    MULTI_GPU_JOB,
    NVLINK_BUSY,
    PCIE_RX_BUSY,
    PINNED_LINK_SHARE,
    SM_BUSY,
    SM_GAPS_PER_UTIL,
    SM_IDLE,
    TENSOR_IDLE,
    THROTTLED_SHARE,
)
from gputriage.diagnosis.run.window_figures import Figures, copies_explain, takes_turns, waits_on_latency
from gputriage.diagnosis.thresholds import (
    IDLE_SM,
    IDLE_UTIL,
    POWER_LIMIT_LOWERED,
    TENSOR_BUSY,
    UNDERFILLED_SM,
    UNDERFILLED_UTIL,
    VRAM_PRESSURE,
)
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import FindingSpec, Threshold


def _idle(f: Figures) -> bool:
    cpu = f.m.workload_cpu_pct
    quiet = f.util < IDLE_UTIL.value and f.sm_or_util < IDLE_SM.value and f.rx < PCIE_RX_BUSY.value
    if cpu is None:
        return quiet and f.util < IDLE_UTIL_UNSAMPLED.value
    return quiet and cpu < IDLE_WORKLOAD_CPU.value


def _throttled(f: Figures) -> bool:
    if (f.m.throttled_share or 0.0) >= THROTTLED_SHARE.value:
        return True
    limit, default = f.gpu.power_limit_mw, f.gpu.power_default_mw
    capped = (f.m.power_capped_share or 0.0) >= THROTTLED_SHARE.value
    return bool(capped and limit and default and 100.0 * limit / default < POWER_LIMIT_LOWERED.value)


def _light(f: Figures) -> bool:
    """Without GPM: the GPU draws little of its power limit, most of its SMs idle."""
    return f.power is not None and f.power < LIGHT_POWER.value


def _tensor(f: Figures) -> float | None:
    return f.m.tensor_active_pct


def _tensor_busy(f: Figures) -> bool:
    """The tensor pipes counted busy (not where they are not counted)."""
    return (f.m.tensor_active_pct or 0.0) >= TENSOR_BUSY.value


def _cuda_cores_only(f: Figures) -> bool:
    """Busy SMs whose tensor pipes rest."""
    tensor = _tensor(f)
    return tensor is not None and tensor < TENSOR_IDLE.value and f.sm_or_util >= SM_BUSY.value


def _copying(f: Figures) -> bool:
    return f.copying is not None and f.copying >= COPY_TIME_SHARE.value


def _compute_bound_without_gpm(f: Figures) -> list[B]:
    copies = [B.h2d_copy_bound] if _copying(f) else []
    if f.power is None:
        return [B.memory_bound, B.tensor_cores_idle, B.underfilled, *copies, *f.unseen]
    return [B.tensor_cores_idle, *copies, *f.unseen]


COPIES = "input workers (processes without a GPU context) run on {input_helpers_cpu_pct:g}% of a core or more"
LINK_RATE = "against {pinned_link_share:.0%} of the link's raw rate, what pinned copies reach"
LABEL_RULES: tuple[LabelRule, ...] = (
    LabelRule(
        B.idle,
        "GPU-Util under {idle_util_pct:g}% and SM activity under {idle_sm_active_pct:g}%, PCIe RX under "
        "{pcie_rx_busy_mib_per_s:,g} MiB/s, and the workload's CPU under {idle_workload_cpu_pct:g}% of a core (where "
        "it was not sampled: GPU-Util under {idle_util_unsampled_pct:g}%)",
        (IDLE_UTIL, IDLE_SM, IDLE_WORKLOAD_CPU, PCIE_RX_BUSY, IDLE_UTIL_UNSAMPLED),
        when=_idle,
    ),
    LabelRule(
        B.contended,
        "another process runs on the GPU while it is busy (GPU-Util {idle_util_pct:g}% or more), or "
        "{job_processes_computing:g} or more of the workload's own processes run kernels on it (a launcher that gave "
        "every worker the same GPU: `run.job_shares_gpu` names them with each one's share)",
        (IDLE_UTIL, JOB_SHARING),
        when=lambda f: (
            bool(f.m.neighbours or (f.m.job_computing or 0.0) >= JOB_SHARING.value) and f.util >= IDLE_UTIL.value
        ),
    ),
    LabelRule(
        B.vram_pressure,
        "the allocator gives memory back to the driver at {allocator_frees_per_s:g} cudaFree a second or more "
        "(`empty_cache()` in the loop, allocations retried near out-of-memory), whatever VRAM holds, where the "
        "workload reports its allocator (Python workloads under `run`): a full GPU whose allocator stays still (a "
        "KV-cache pool taken at start) is no pressure. Without the report, memory used at {vram_pressure_pct:g}% of "
        "the GPU or more. Either way not while the SMs stay saturated (GPU-Util {underfilled_util_pct:g}% or more "
        "and SM activity at {sm_gaps_per_util:g} × GPU-Util or more); without GPM, a full GPU at that GPU-Util "
        "leaves vram_pressure possible beside the label of the rules below",
        (ALLOC_CHURN, VRAM_PRESSURE, UNDERFILLED_UTIL, SM_GAPS_PER_UTIL),
        when=lambda f: f.pressure is True,
        leaves_open=lambda f: f.pressure is None,
    ),
    LabelRule(
        B.throttled,
        "a thermal or hardware slowdown reason in {throttled_share:.0%} of the window's samples or more, or the "
        "power cap active as often at a limit lowered below {power_limit_lowered_pct:g}% of the default",
        (THROTTLED_SHARE, POWER_LIMIT_LOWERED),
        when=_throttled,
    ),
    LabelRule(
        B.comm_bound,
        "NVLink carries {nvlink_busy_share:.0%} of the links' capacity or more (the busier direction) while the "
        "tensor pipes are under {tensor_busy_pct:g}% (or not counted): the GPUs exchange data more than they "
        "compute; whether computation overlaps it shows only in a trace. On a job holding contexts on "
        "{job_gpus_several:g} GPUs or more whose links are not counted (PCIe, the network), a collective is out of "
        "sight: every label below that its kernels could make without tensor-core math keeps comm_bound possible",
        (NVLINK_BUSY, TENSOR_BUSY, MULTI_GPU_JOB),
        when=lambda f: f.links_busy and not _tensor_busy(f),
        needs=("gpu", "nvlink"),
    ),
    LabelRule(
        B.h2d_copy_bound,
        "SM activity under {copy_sm_active_pct:g}% while PCIe RX runs at {pcie_rx_busy_mib_per_s:,g} MiB/s or "
        f"more, unless {COPIES} while the copies take under {{copy_time_share:.0%}} of the time ({LINK_RATE}): "
        "pinned batches from a DataLoader, the GPU waits for the workers",
        (SM_IDLE, PCIE_RX_BUSY, INPUT_HELPERS_CPU, COPY_TIME_SHARE, PINNED_LINK_SHARE),
        when=lambda f: f.sm_or_util < SM_IDLE.value and f.rx >= PCIE_RX_BUSY.value and copies_explain(f),
        gpm=True,
    ),
    LabelRule(
        B.h2d_copy_bound,
        "PCIe RX at {pcie_rx_busy_mib_per_s:,g} MiB/s or more while the GPU draws under "
        "{light_power_share:.0%} of its power limit or GPU-Util is under {mostly_idle_util_pct:g}%, unless "
        f"{COPIES} while the copies take under {{copy_time_share:.0%}} of the time ({LINK_RATE})",
        (PCIE_RX_BUSY, LIGHT_POWER, GPU_MOSTLY_IDLE_UTIL, INPUT_HELPERS_CPU, COPY_TIME_SHARE, PINNED_LINK_SHARE),
        when=lambda f: (
            f.rx >= PCIE_RX_BUSY.value and (_light(f) or f.util < GPU_MOSTLY_IDLE_UTIL.value) and copies_explain(f)
        ),
        gpm=False,
    ),
    LabelRule(
        B.h2d_copy_bound,
        "SM activity under {underfilled_sm_active_pct:g}% while PCIe RX says copies run {copy_time_share:.0%} of "
        f"the time or more ({LINK_RATE}): copies that take turns with the kernels on one stream leave the SMs idle "
        "while GPU-Util reads full; underfilled stays possible",
        (UNDERFILLED_SM, COPY_TIME_SHARE, PINNED_LINK_SHARE),
        when=lambda f: f.sm_or_util < UNDERFILLED_SM.value and _copying(f),
        possible=lambda f: [B.underfilled],
        gpm=True,
    ),
    LabelRule(
        B.underfilled,
        "GPU-Util {underfilled_util_pct:g}% or more but SM activity under {underfilled_sm_active_pct:g}%: a kernel "
        "always runs, but it covers few SMs",
        (UNDERFILLED_UTIL, UNDERFILLED_SM),
        when=lambda f: f.sm_or_util < UNDERFILLED_SM.value and f.util >= UNDERFILLED_UTIL.value,
        possible=lambda f: [*f.unseen],
        gpm=True,
    ),
    LabelRule(
        B.underfilled,
        "GPU-Util {underfilled_util_pct:g}% or more while the GPU draws under {light_power_share:.0%} "
        "of its power limit",
        (UNDERFILLED_UTIL, LIGHT_POWER),
        when=lambda f: f.util >= UNDERFILLED_UTIL.value and _light(f),
        possible=lambda f: [*f.unseen],
        gpm=False,
    ),
    LabelRule(
        None,
        "(GPU-Util under {host_bound_util_pct:g}%): the host does not keep the GPU fed. Which host-side cause, from "
        "what the counters can tell apart:",
        (HOST_BOUND_UTIL,),
        when=lambda f: f.util < HOST_BOUND_UTIL.value,
        needs=("gpu", "workload"),
        title="The GPU idles a quarter of the time or more",
        then=HOST_RULES,
    ),
    LabelRule(
        B.compute_bound,
        "the tensor pipes at {tensor_busy_pct:g}% or more: the math runs on tensor cores, healthy. With SM activity "
        "under {sm_gaps_per_util:g} × GPU-Util, the SMs idle in gaps GPU-Util does not see (the allocator, syncs) "
        "or under kernels that cover part of them: underfilled stays possible; with NVLink at "
        "{nvlink_busy_share:.0%} of its capacity or more, comm_bound does",
        (TENSOR_BUSY, SM_GAPS_PER_UTIL, NVLINK_BUSY),
        when=_tensor_busy,
        possible=lambda f: [
            *([B.underfilled] if f.sm_or_util < SM_GAPS_PER_UTIL.value * f.util else []),
            *([B.comm_bound] if f.links_busy else []),
        ],
        gpm=True,
    ),
    LabelRule(
        B.memory_bound,
        "DRAM bandwidth at {dram_busy_pct:g}% of peak or more",
        (DRAM_BUSY,),
        when=lambda f: (f.m.dram_active_pct or 0.0) >= DRAM_BUSY.value,
        possible=lambda f: [*f.unseen],
        gpm=True,
    ),
    LabelRule(
        B.memory_bound,
        "nvidia-smi's memory util at {mem_util_busy_pct:g}% or more (the time memory is busy, not its bandwidth)",
        (MEM_UTIL_BUSY,),
        when=lambda f: (f.m.mem_util_pct or 0.0) >= MEM_UTIL_BUSY.value,
        possible=lambda f: [*f.unseen],
        gpm=False,
    ),
    LabelRule(
        B.memory_bound,
        "SM activity {cuda_core_sm_pct:g}% or more with the tensor pipes under {tensor_idle_pct:g}%, every other "
        "math pipe (FP64, FP32, FP16) under {cuda_math_busy_pct:g}% and DRAM under {dram_busy_pct:g}% of peak: the "
        "warps compute on nothing, waiting on scattered reads (gathers, embedding lookups)",
        (SM_BUSY, TENSOR_IDLE, CUDA_MATH_BUSY, DRAM_BUSY),
        when=lambda f: _cuda_cores_only(f) and waits_on_latency(f.m.dram_active_pct, f.m.cuda_math_active_pct),
        possible=lambda f: [*f.unseen],
        gpm=True,
    ),
    LabelRule(
        B.tensor_cores_idle,
        "SM activity {cuda_core_sm_pct:g}% or more with the tensor pipes under {tensor_idle_pct:g}%, DRAM under "
        "{dram_busy_pct:g}% of peak, and a math pipe at {cuda_math_busy_pct:g}% or more (or not counted): the math "
        "runs on CUDA cores",
        (SM_BUSY, TENSOR_IDLE, DRAM_BUSY, CUDA_MATH_BUSY),
        when=_cuda_cores_only,
        possible=lambda f: [*f.unseen],
        gpm=True,
    ),
    LabelRule(
        B.compute_bound,
        "the tensor pipes at {tensor_idle_pct:g}% or more, DRAM at {dram_mixed_pct:g}% of peak or more and the other "
        "math pipes under {cuda_math_busy_pct:g}%: GEMMs take turns with memory-bound kernels (unfused norms, "
        "dropout, residual adds); memory_bound stays possible, and which takes more of the time shows in a trace",
        (TENSOR_IDLE, DRAM_MIXED, CUDA_MATH_BUSY),
        when=lambda f: takes_turns(_tensor(f), f.m.dram_active_pct, f.m.cuda_math_active_pct),
        possible=lambda f: [B.memory_bound, *f.unseen],
        gpm=True,
    ),
    LabelRule(
        B.compute_bound,
        "otherwise: the SMs set the pace, their math on CUDA cores or on tensor cores part of the time",
        possible=lambda f: [*f.unseen],
        gpm=True,
    ),
    LabelRule(
        B.compute_bound,
        "otherwise: tensor cores cannot be told from CUDA cores (tensor_cores_idle stays possible; "
        "without the power drawn, memory_bound and underfilled too), nor copies taking turns with the kernels "
        "(h2d_copy_bound stays possible where PCIe RX says copies run {copy_time_share:.0%} of the time or more, "
        f"{LINK_RATE})",
        (COPY_TIME_SHARE, PINNED_LINK_SHARE),
        possible=_compute_bound_without_gpm,
        gpm=False,
    ),
)


def _giving(b: B) -> list[tuple[LabelRule, ...]]:
    """Each rule that can name `b`, with the groups it stands in (outermost first)."""
    out: list[tuple[LabelRule, ...]] = []
    for rule in LABEL_RULES:
        if rule.then:
            out += [(rule, sub) for sub in rule.then if b in sub.gives()]
        elif b in rule.gives():
            out.append((rule,))
    return out


def _thresholds_of(b: B) -> tuple[Threshold, ...]:
    found = [t for path in _giving(b) for rule in path for t in rule.thresholds]
    return tuple({t.name: t for t in found}.values())


def _needs_of(b: B) -> tuple[str, ...]:
    """What every rule that can name `b` needs: what `b` needs to be seen at all."""
    each = [[n for rule in path for n in rule.requires()] for path in _giving(b)]
    return tuple(dict.fromkeys(n for n in each[0] if all(n in other for other in each)))


# the thresholds each label rests on, and what it needs to be seen at all, for the catalog and the blind spots
LABEL_THRESHOLDS: dict[B, tuple[Threshold, ...]] = {b: _thresholds_of(b) for b in B}
LABEL_NEEDS: dict[B, tuple[str, ...]] = {b: _needs_of(b) for b in B}

RUN = ("run", "watch", "monitor")
VERDICT_SPECS: dict[B, FindingSpec] = {
    b: FindingSpec(
        id=f"run.{b.value}",
        step=MEANINGS[b].step,
        severity=severity_of(b),
        symptom=MEANINGS[b].symptom,
        cause=MEANINGS[b].cause,
        decision=MEANINGS[b].decision,
        commands=RUN,
        condition="the label of most of the steady state's windows (a second each by default; the rules of "
        "`diagnosis.run.labels`); stated once, as the GPU's verdict (`verdict.per_gpu[N].finding`), not among the "
        "findings",
        thresholds=LABEL_THRESHOLDS[b],
        needs=LABEL_NEEDS[b],
    )
    for b in B
}


def _item(rule: LabelRule) -> str:
    """A rule as the docs list it: its label (or its title) in bold, then its meaning."""
    if rule.label is not None:
        without = " (without GPM)" if rule.gpm is False else ""
        eliminated = " (by elimination)" if rule.by_elimination else ""
        return f"**{rule.label.value}**{without}{eliminated}: {rule.rendered()}"
    return f"**{rule.title}** {rule.rendered()}" if rule.then else f"**{rule.title}**: {rule.rendered()}"


def markdown() -> str:
    """The numbered list of the label rules, in order, their thresholds' values written where they name them: the
    section of docs/verdicts.md between its `label rules` markers."""
    lines = []
    for i, rule in enumerate(LABEL_RULES, 1):
        lines.append(f"{i}. {_item(rule)}" + ("" if rule.then else "."))
        lines += [f"    - {_item(sub)}" + (";" if sub is not rule.then[-1] else ".") for sub in rule.then]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if sys.argv[1:] != ["--markdown"]:
        sys.exit("usage: python -m gputriage.diagnosis.run.labels --markdown")
    sys.stdout.write(markdown())
