"""nvidia-smi's GPU-Util and memory util, and on Hopper+ the real SM activity through NVML GPM.

GPU-Util is the share of time *any* kernel ran; it says nothing of how many SMs worked. GPM's SM
activity and occupancy, tensor-pipe activity and DRAM bandwidth say how much of the chip did.
"""

from __future__ import annotations

from typing import Any

from gputriage.backends.nvml import (
    GPM_ANY_TENSOR_UTIL,
    GPM_DRAM_BW_UTIL,
    GPM_GRAPHICS_UTIL,
    GPM_SM_OCCUPANCY,
    GPM_SM_UTIL,
)
from gputriage.collect.base import Context, fact
from gputriage.model.fact import Fact
from gputriage.model.reading import Unavailable

GPM_FACTS = {
    GPM_GRAPHICS_UTIL: "gpm.graphics_active_pct",
    GPM_SM_UTIL: "gpm.sm_active_pct",
    GPM_SM_OCCUPANCY: "gpm.sm_occupancy_pct",
    GPM_ANY_TENSOR_UTIL: "gpm.tensor_active_pct",
    GPM_DRAM_BW_UTIL: "gpm.dram_bw_util_pct",
}


def collect_util(ctx: Context) -> list[Fact]:
    facts: list[Fact] = []
    for i in ctx.gpus:
        util = ctx.nvml.call("nvmlDeviceGetUtilizationRates", i)
        for key, name in (("gpu", "util.gpu_pct"), ("memory", "util.memory_pct")):
            value = util if isinstance(util, Unavailable) else util[key]
            facts.append(fact(f"gpu.{i}.{name}", value, "nvml:nvmlDeviceGetUtilizationRates"))
    return facts


def gpm_begin(ctx: Context) -> dict[int, Any]:
    return {i: ctx.nvml.gpm_sample(i) for i in ctx.gpus}


def gpm_end(ctx: Context, first: dict[int, Any]) -> list[Fact]:
    facts: list[Fact] = []
    for i in ctx.gpus:
        start = first[i]
        if isinstance(start, Unavailable):
            result: Any = start
        else:
            second = ctx.nvml.gpm_sample(i)
            result = second if isinstance(second, Unavailable) else ctx.nvml.gpm_metrics(i, start, second)
            ctx.nvml.gpm_free(start)
            if not isinstance(second, Unavailable):
                ctx.nvml.gpm_free(second)
        if isinstance(result, Unavailable):
            facts += [fact(f"gpu.{i}.{name}", result, "nvml:gpm") for name in GPM_FACTS.values()]
            facts.append(fact(f"gpu.{i}.gpm.window_ms", result, "nvml:gpm"))
            continue
        metrics = result.get("metrics", {})
        for mid, name in GPM_FACTS.items():
            value = metrics.get(str(mid))
            reading = round(float(value), 2) if value is not None else Unavailable("not_supported", f"GPM metric {mid}")
            facts.append(fact(f"gpu.{i}.{name}", reading, f"nvml:gpm:{mid}"))
        facts.append(fact(f"gpu.{i}.gpm.window_ms", round(float(result.get("window_ms", 0.0)), 1), "nvml:gpm"))
    return facts
