"""Name the bottleneck of one window of samples.

Samples are cut into windows (1 s by default, `monitor.windows`); each window gets one label from the Bottleneck
vocabulary by the label rules (`diagnosis.run.labels.LABEL_RULES`, evaluated in order: the first that applies names
it); consecutive windows with the same label form a regime (`diagnosis.run.verdict`). The rules, with their
thresholds, are listed on docs/verdicts.md ("From counters to a verdict") and by `gputriage rules --command run`.
"""

from __future__ import annotations

from gputriage.diagnosis.run.label_rule import first
from gputriage.diagnosis.run.label_thresholds import (
    ALLOC_CHURN,
    COPY_TIME_SHARE,
    CUDA_MATH_BUSY,
    DRAM_MIXED,
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
    "computes",
    "copy_time_share",
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
