"""A fake NVML that replays a recorded machine, with switches for the faults the playbook describes."""

from __future__ import annotations

import copy
import re
from typing import Any

from gputriage.backends.nvml import call_key, encode
from gputriage.backends.nvml_replay import ReplayNvml
from gputriage.model.reading import Reading, Unavailable


class FakeNvml(ReplayNvml):
    """`records` are a snapshot's raw NVML calls. Fault switches edit the answers."""

    def __init__(self, records: dict[str, Any]) -> None:
        super().__init__(copy.deepcopy(records))
        self._lost_after: dict[int, int] = {}
        self._calls: dict[int, int] = {}
        self.gpm_series: dict[int, list[dict[str, float]]] = {}

    # --- fault switches -------------------------------------------------------------------
    def no_driver(self) -> FakeNvml:
        self.source = {"nvmlInit": encode(Unavailable("no_driver", "NVML Shared Library Not Found"))}
        return self

    def driver_mismatch(self) -> FakeNvml:
        self.source = {"nvmlInit": encode(Unavailable("driver_mismatch", "Driver/library version mismatch"))}
        return self

    def gpu_lost(self, index: int, after_calls: int = 0) -> FakeNvml:
        """Every call on GPU `index` answers GPU_IS_LOST (after `after_calls` good ones)."""
        self._lost_after[index] = after_calls
        return self

    def set(self, fn: str, index: int | None, value: Any, *args: Any) -> FakeNvml:
        self.source[call_key(fn, index, args)] = encode(value)
        return self

    def not_supported(self, pattern: str) -> FakeNvml:
        """Calls whose key matches `pattern` answer NOT_SUPPORTED (as in VMs and MIG)."""
        for key in list(self.source):
            if re.search(pattern, key):
                self.source[key] = encode(Unavailable("not_supported", "Not Supported"))
        return self

    def add_gpu_like(self, index: int) -> FakeNvml:
        """A second GPU answering like GPU `index` (a recorded machine has one; faults need two)."""
        new = int(self.source.get("nvmlDeviceGetCount", 1))
        for key in [k for k in self.source if k.split("/")[1:2] == [str(index)]]:
            fn, _, rest = key.split("/", 2) + [""] * (3 - len(key.split("/", 2)))
            self.source["/".join(x for x in (fn, str(new), rest) if x)] = copy.deepcopy(self.source[key])
        self.source["nvmlDeviceGetCount"] = new + 1
        return self

    def link(self, index: int, *, gen: int | None = None, width: int | None = None) -> FakeNvml:
        if gen is not None:
            self.set("nvmlDeviceGetCurrPcieLinkGeneration", index, gen)
        if width is not None:
            self.set("nvmlDeviceGetCurrPcieLinkWidth", index, width)
        return self

    def clock_reasons(self, index: int, mask: int) -> FakeNvml:
        return self.set("nvmlDeviceGetCurrentClocksEventReasons", index, mask)

    def add_process(self, index: int, pid: int, used_bytes: int) -> FakeNvml:
        key = call_key("nvmlDeviceGetComputeRunningProcesses", index)
        procs = list(self.source.get(key) or [])
        procs.append({"pid": pid, "usedGpuMemory": used_bytes, "gpuInstanceId": 0, "computeInstanceId": 0})
        self.source[key] = procs
        mem = dict(self.source.get(call_key("nvmlDeviceGetMemoryInfo", index)) or {})
        if mem:
            mem["used"] = mem.get("used", 0) + used_bytes
            mem["free"] = mem["total"] - mem["used"]
            self.source[call_key("nvmlDeviceGetMemoryInfo", index)] = mem
        return self

    def gpm(self, index: int, metrics: dict[int, float]) -> FakeNvml:
        self.source[f"gpm/{index}"] = {"window_ms": 500.0, "metrics": {str(k): v for k, v in metrics.items()}}
        return self

    # --- answers ---------------------------------------------------------------------------
    def _lost_now(self, index: int | None) -> bool:
        if index is None or index not in self._lost_after:
            return False
        self._calls[index] = self._calls.get(index, 0) + 1
        return self._calls[index] > self._lost_after[index]

    def call(self, fn: str, index: int | None = None, *args: Any) -> Reading:
        if self._lost_now(index):
            return Unavailable("gpu_lost", "GPU is lost")
        return super().call(fn, index, *args)

    def gpm_sample(self, index: int, into: Any = None) -> Reading:
        if self._lost_now(index):
            return Unavailable("gpu_lost", "GPU is lost")
        return super().gpm_sample(index, into)
