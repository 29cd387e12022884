"""A fake NVML that replays a recorded 10 Hz stream of one GPU, row by row, for the sampler."""

from __future__ import annotations

from typing import Any, Iterable

from gputriage.backends.nvml import GPM_DEFAULT_METRICS, NvmlBackend
from gputriage.model.reading import Reading, Unavailable


class StreamNvml(NvmlBackend):
    """Rows as recorded (`util`, `memutil`, `used`, `power`, `sm_clk`, `reasons`, `temp`, `gpm`).
    Each utilization call moves to the next row, as one sampler tick reads it first; after the last
    row the stream stays on it."""

    def __init__(self, rows: list[dict[str, Any]], total_bytes: int = 150754820096, name: str = "NVIDIA H200") -> None:
        self.rows, self.total, self.name = rows, total_bytes, name
        self.i = -1
        self.records: dict[str, Any] = {}

    @property
    def row(self) -> dict[str, Any]:
        return self.rows[max(0, min(self.i, len(self.rows) - 1))]

    def init(self) -> Unavailable | None:
        return None

    def call(self, fn: str, index: int | None = None, *args: Any) -> Reading:
        if fn == "nvmlDeviceGetUtilizationRates":
            self.i += 1
            return {"gpu": self.row["util"], "memory": self.row["memutil"]}
        r = self.row
        answers: dict[str, Any] = {
            "nvmlDeviceGetCount": 1,
            "nvmlDeviceGetName": self.name,
            "nvmlDeviceGetUUID": "GPU-replayed",
            "nvmlDeviceGetPowerUsage": r.get("power"),
            "nvmlDeviceGetCurrentClocksEventReasons": r.get("reasons"),
            "nvmlDeviceGetTemperature": r.get("temp"),
            "nvmlDeviceGetMemoryInfo": {
                "total": self.total,
                "used": r.get("used"),
                "free": self.total - r.get("used", 0),
            },
            "nvmlDeviceGetEnforcedPowerLimit": 700000,
            "nvmlDeviceGetPowerManagementDefaultLimit": 700000,
            "nvmlDeviceGetMaxPcieLinkGeneration": 5,
            "nvmlDeviceGetMaxPcieLinkWidth": 16,
            "nvmlSystemGetDriverVersion": "replay",
            "nvmlSystemGetCudaDriverVersion_v2": 13000,
            "nvmlDeviceGetComputeRunningProcesses": [],
        }
        if fn == "nvmlDeviceGetClockInfo":
            return r.get("sm_clk") if args and args[0] == 1 else 3201
        if fn == "nvmlDeviceGetMaxClockInfo":
            return 1980
        if fn in answers and answers[fn] is not None:
            return answers[fn]
        return Unavailable("not_supported", fn)

    def gpm_sample(self, index: int, into: Any = None) -> Reading:
        return ("replay", self.i)

    def gpm_metrics(
        self, index: int, first: Any, second: Any, metric_ids: Iterable[int] = GPM_DEFAULT_METRICS
    ) -> Reading:
        return {"window_ms": 100.0, "metrics": {str(k): float(v) for k, v in self.row.get("gpm", {}).items()}}
