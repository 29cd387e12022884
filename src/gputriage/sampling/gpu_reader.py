"""One GPU's row of a sample: NVML's counters every tick, GPM over the interval since the previous read,
the slower fields (memory, temperature, PCIe and NVLink counters before Hopper) every few ticks."""

from __future__ import annotations

import time
from typing import Any

from gputriage.backends.nvml import (
    ALL_LINKS,
    FI_NVLINK_DATA_RX_KIB,
    FI_NVLINK_DATA_TX_KIB,
    GPM_ANY_TENSOR_UTIL,
    GPM_DRAM_BW_UTIL,
    GPM_FP16_UTIL,
    GPM_FP32_UTIL,
    GPM_FP64_UTIL,
    GPM_NVLINK_RX_PER_SEC,
    GPM_NVLINK_TX_PER_SEC,
    GPM_PCIE_RX_PER_SEC,
    GPM_PCIE_TX_PER_SEC,
    GPM_SM_OCCUPANCY,
    GPM_SM_UTIL,
    NvmlBackend,
    field_key,
)
from gputriage.model.reading import Unavailable
from gputriage.model.sample import GpuSample

NVML_PCIE_UTIL_TX_BYTES, NVML_PCIE_UTIL_RX_BYTES = 0, 1


def _ok(reading: Any) -> bool:
    return not isinstance(reading, Unavailable)


SAMPLED_GPM = (
    GPM_SM_UTIL,
    GPM_SM_OCCUPANCY,
    GPM_ANY_TENSOR_UTIL,
    GPM_DRAM_BW_UTIL,
    GPM_FP64_UTIL,
    GPM_FP32_UTIL,
    GPM_FP16_UTIL,
    GPM_PCIE_TX_PER_SEC,
    GPM_PCIE_RX_PER_SEC,
    GPM_NVLINK_TX_PER_SEC,
    GPM_NVLINK_RX_PER_SEC,
)
GPM_FIELDS = {
    str(GPM_SM_UTIL): "sm_active_pct",
    str(GPM_SM_OCCUPANCY): "sm_occupancy_pct",
    str(GPM_ANY_TENSOR_UTIL): "tensor_active_pct",
    str(GPM_DRAM_BW_UTIL): "dram_active_pct",
    str(GPM_FP64_UTIL): "fp64_active_pct",
    str(GPM_FP32_UTIL): "fp32_active_pct",
    str(GPM_FP16_UTIL): "fp16_active_pct",
    str(GPM_PCIE_TX_PER_SEC): "pcie_tx_mib_per_s",
    str(GPM_PCIE_RX_PER_SEC): "pcie_rx_mib_per_s",
    str(GPM_NVLINK_TX_PER_SEC): "nvlink_tx_mib_per_s",
    str(GPM_NVLINK_RX_PER_SEC): "nvlink_rx_mib_per_s",
}
NVLINK_COUNTERS = ((FI_NVLINK_DATA_TX_KIB, ALL_LINKS), (FI_NVLINK_DATA_RX_KIB, ALL_LINKS))
NVLINK_TX, NVLINK_RX = (field_key(f, s) for f, s in NVLINK_COUNTERS)
COUNTER_FIELDS = {
    "util": "util_pct",
    "memutil": "mem_util_pct",
    "power": "power_mw",
    "sm_clk": "sm_clock_mhz",
    "reasons": "clock_event_reasons",
}


class GpuReader:
    """One GPU's row: utilization, power, SM clock, clock-event reasons and GPM (over the interval since
    the previous read) each tick; memory used and temperature every `slow_every` ticks, and there too,
    where the GPU has no GPM, PCIe traffic from its PCIe counters."""

    def __init__(self, nvml: NvmlBackend, index: int, use_gpm: bool = True, slow_every: int = 5) -> None:
        self.nvml, self.index, self.slow_every = nvml, index, slow_every
        self._gpm_prev: Any = nvml.gpm_sample(index) if use_gpm else Unavailable("not_supported", "off")
        self.gpm_ok = _ok(self._gpm_prev)
        self._gpm_spare: Any = None  # the buffer of the sample before last, refilled next time
        self._tick = 0
        self._slow: dict[str, Any] = {}
        self._nvlink_prev: tuple[float, float, float] | None = None  # (tx KiB, rx KiB, monotonic s)
        self._nvlink_ok = not self.gpm_ok

    def read(self) -> GpuSample:
        n, i = self.nvml, self.index
        fields: dict[str, Any] = {COUNTER_FIELDS[k]: v for k, v in n.gpu_counters(i).items()}
        if self._tick % self.slow_every == 0:
            self._slow = {}
            temp = n.call("nvmlDeviceGetTemperature", i, 0)
            if not isinstance(temp, Unavailable):
                self._slow["temperature_c"] = temp
            mem = n.call("nvmlDeviceGetMemoryInfo", i)
            if not isinstance(mem, Unavailable):
                self._slow["used_bytes"] = mem["used"]
            if not self.gpm_ok:  # before Hopper: the PCIe counters every GPU has (KiB/s over 20 ms)
                for key, counter in (
                    ("pcie_tx_mib_per_s", NVML_PCIE_UTIL_TX_BYTES),
                    ("pcie_rx_mib_per_s", NVML_PCIE_UTIL_RX_BYTES),
                ):
                    kib = n.call("nvmlDeviceGetPcieThroughput", i, counter)
                    if isinstance(kib, (int, float)):
                        self._slow[key] = round(kib / 1024.0, 1)
                if self._nvlink_ok:
                    self._read_nvlink()
        self._tick += 1
        fields.update(self._slow)
        if self.gpm_ok:
            cur = n.gpm_sample(i, into=self._gpm_spare)
            if _ok(cur):
                m = n.gpm_metrics(i, self._gpm_prev, cur, SAMPLED_GPM)
                self._gpm_spare, self._gpm_prev = self._gpm_prev, cur
                if not isinstance(m, Unavailable):
                    for k, v in m["metrics"].items():
                        if k in GPM_FIELDS:
                            fields[GPM_FIELDS[k]] = round(v, 2)
        return GpuSample(index=i, **fields)

    def _read_nvlink(self) -> None:
        """NVLink payload rates from the cumulative counters (GPUs without GPM; asked until one fails)."""
        got = self.nvml.field_values(self.index, NVLINK_COUNTERS)
        if not isinstance(got, dict) or NVLINK_TX not in got or NVLINK_RX not in got:
            self._nvlink_ok = False
            return
        now = (got[NVLINK_TX], got[NVLINK_RX], time.monotonic())
        prev, self._nvlink_prev = self._nvlink_prev, now
        if prev is not None and now[2] > prev[2]:
            dt = now[2] - prev[2]
            self._slow["nvlink_tx_mib_per_s"] = round(max(0.0, now[0] - prev[0]) / 1024.0 / dt, 1)
            self._slow["nvlink_rx_mib_per_s"] = round(max(0.0, now[1] - prev[1]) / 1024.0 / dt, 1)

    def close(self) -> None:
        if self.gpm_ok:
            self.nvml.gpm_free(self._gpm_prev)
            if self._gpm_spare is not None:
                self.nvml.gpm_free(self._gpm_spare)
