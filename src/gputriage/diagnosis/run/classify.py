"""Name the bottleneck of one window of samples.

Samples are cut into windows (1 s by default, `monitor.windows`); each window gets one label from the Bottleneck
vocabulary by the label rules (`diagnosis.run.labels.LABEL_RULES`, evaluated in order: the first that applies names
it); consecutive windows with the same label form a regime (`diagnosis.run.verdict`). The rules, with their
thresholds, are listed on docs/verdicts.md ("From counters to a verdict") and by `gputriage rules --command run`.
"""

from __future__ import annotations

from gputriage.diagnosis.run.label_rule import deciding, first
from gputriage.diagnosis.run.label_thresholds import (
    ALLOC_CHURN,
    COPY_TIME_SHARE,
    CUDA_MATH_BUSY,
    DRAM_MIXED,
    ELIMINATED_SHARE,
    SM_GAPS_PER_UTIL,
    SMALL_KERNEL_OCC_PER_UTIL,
)
from gputriage.diagnosis.run.labels import LABEL_NEEDS, LABEL_RULES, LABEL_THRESHOLDS
from gputriage.diagnosis.run.window_figures import (
    allocator_pressure,
    computes,
    copy_time_share,
    figures_of,
    nvlink_share,
    power_share,
    takes_turns,
    waits_on_latency,
)
from gputriage.diagnosis.thresholds import TENSOR_BUSY
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.run import GpuStatic
from gputriage.model.window import WindowMetrics

__all__ = [
    "ALLOC_CHURN",
    "COPY_TIME_SHARE",
    "CUDA_MATH_BUSY",
    "DRAM_MIXED",
    "LABEL_NEEDS",
    "LABEL_THRESHOLDS",
    "SMALL_KERNEL_OCC_PER_UTIL",
    "SM_GAPS_PER_UTIL",
    "TENSOR_BUSY",
    "B",
    "allocator_pressure",
    "by_elimination",
    "computes",
    "copy_time_share",
    "elimination_evidence",
    "label",
    "nvlink_share",
    "power_share",
    "takes_turns",
    "waits_on_latency",
]


def label(m: WindowMetrics, gpu: GpuStatic) -> tuple[B, list[B]]:
    """The window's bottleneck, and the others the counters cannot rule out."""
    found = first(LABEL_RULES, figures_of(m, gpu))
    assert found is not None, "the last label rules apply to every window"
    return found


def by_elimination(m: WindowMetrics, gpu: GpuStatic) -> bool:
    """The window's label is named by elimination (`LabelRule.by_elimination`): the GPU waits on the host, and
    nothing seen says what the host does; the label is what the counters leave once they rule the others out."""
    rule = deciding(LABEL_RULES, figures_of(m, gpu))
    return rule is not None and rule.by_elimination


ELIMINATED = "named_by_elimination"  # a verdict's evidence: the share of its windows named by elimination


def elimination_evidence(chosen: list[WindowMetrics], gpu: GpuStatic) -> dict[str, float]:
    """`{ELIMINATED: share}` where most of a verdict's windows were named by elimination, else nothing: its words
    then say so (`verdict_words`), not that the cause was seen."""
    if not chosen:
        return {}
    share = sum(by_elimination(m, gpu) for m in chosen) / len(chosen)
    return {ELIMINATED: round(share, 2)} if share >= ELIMINATED_SHARE.value else {}
