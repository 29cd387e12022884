"""The bottleneck of the last second on a live machine: what `watch` shows beside each GPU and what the
exporter publishes as gputriage_bottleneck. Each GPU's last second (`sampling.live.LastSecond`: its samples'
figures and the CPU of the processes on it) is labelled by the rules that label a run's windows
(`classify.label`), so a second that `run` would call launch_bound is launch_bound live too."""

from __future__ import annotations

from typing import Mapping

from gputriage.diagnosis.run.classify import label
from gputriage.model.bottleneck import Bottleneck
from gputriage.model.run import GpuStatic
from gputriage.model.window import WindowMetrics


def live_label(m: WindowMetrics, gpu: GpuStatic) -> Bottleneck:
    """One GPU's last second, named as a run's window of the same figures is."""
    return label(m, gpu)[0]


def live_labels(metrics: Mapping[int, WindowMetrics], static: Mapping[int, GpuStatic]) -> dict[int, Bottleneck]:
    """Each GPU's last second (`static`: each GPU's unchanging facts, by index; a GPU missing from it is
    judged without them)."""
    return {i: live_label(m, static.get(i, GpuStatic())) for i, m in metrics.items()}
