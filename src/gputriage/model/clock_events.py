"""NVML's clock-event reasons (nvmlClocksEventReason* bits, nvml.h): why the SM clock is below its
maximum."""

from __future__ import annotations

CLOCK_EVENT_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
THERMAL_REASONS = {"sw_thermal_slowdown", "hw_thermal_slowdown"}
HW_REASONS = {"hw_slowdown", "hw_power_brake_slowdown", "hw_thermal_slowdown"}
POWER_CAP_BIT = 0x4
THERMAL_OR_HW_BITS = 0x8 | 0x20 | 0x40 | 0x80  # a slowdown the workload did not ask for


def decode_reasons(mask: int) -> list[str]:
    return [name for bit, name in CLOCK_EVENT_REASONS.items() if mask & bit]
