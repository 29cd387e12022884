"""Power draw vs limits, temperature, SM clock vs max, clock-event reasons, violation time (tasks 13, 14)."""

from __future__ import annotations

from gputriage.collect.base import Context, fact, nvml_fact
from gputriage.model.clock_events import decode_reasons
from gputriage.model.fact import Fact
from gputriage.model.reading import Unavailable

NVML_TEMPERATURE_GPU = 0
NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1
NVML_TEMPERATURE_THRESHOLD_GPU_MAX = 3
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_PERF_POLICY_POWER = 0
NVML_PERF_POLICY_THERMAL = 1


def collect(ctx: Context) -> list[Fact]:
    facts: list[Fact] = []
    for i in ctx.gpus:
        facts += [
            nvml_fact(ctx, i, "power.draw_mw", "nvmlDeviceGetPowerUsage"),
            nvml_fact(ctx, i, "power.limit_enforced_mw", "nvmlDeviceGetEnforcedPowerLimit"),
            nvml_fact(ctx, i, "power.limit_default_mw", "nvmlDeviceGetPowerManagementDefaultLimit"),
            nvml_fact(ctx, i, "temperature_c", "nvmlDeviceGetTemperature", NVML_TEMPERATURE_GPU),
            nvml_fact(
                ctx,
                i,
                "temperature.slowdown_c",
                "nvmlDeviceGetTemperatureThreshold",
                NVML_TEMPERATURE_THRESHOLD_SLOWDOWN,
            ),
            nvml_fact(ctx, i, "clock.sm_mhz", "nvmlDeviceGetClockInfo", NVML_CLOCK_SM),
            nvml_fact(ctx, i, "clock.sm_max_mhz", "nvmlDeviceGetMaxClockInfo", NVML_CLOCK_SM),
            nvml_fact(ctx, i, "clock.mem_mhz", "nvmlDeviceGetClockInfo", NVML_CLOCK_MEM),
            nvml_fact(ctx, i, "performance_state", "nvmlDeviceGetPerformanceState"),
        ]
        reasons = ctx.nvml.call("nvmlDeviceGetCurrentClocksEventReasons", i)
        facts.append(fact(f"gpu.{i}.clock.event_reasons_mask", reasons, "nvml:nvmlDeviceGetCurrentClocksEventReasons"))
        facts.append(
            fact(
                f"gpu.{i}.clock.event_reasons",
                reasons if isinstance(reasons, Unavailable) else decode_reasons(int(reasons)),
                "nvml:nvmlDeviceGetCurrentClocksEventReasons",
            )
        )
        for policy, name in ((NVML_PERF_POLICY_POWER, "power"), (NVML_PERF_POLICY_THERMAL, "thermal")):
            v = ctx.nvml.call("nvmlDeviceGetViolationStatus", i, policy)
            ns = v if isinstance(v, Unavailable) else int(v["violationTime"])
            facts.append(fact(f"gpu.{i}.violation.{name}_ns", ns, "nvml:nvmlDeviceGetViolationStatus"))
    return facts
