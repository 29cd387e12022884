"""NVML through nvidia-ml-py: every call returns a plain value or an `Unavailable`, never raises.

`NvmlBackend` is the interface the collectors and the sampler use; `PynvmlBackend` talks to the
driver, `nvml_replay.ReplayNvml` answers from the calls a `PynvmlBackend` recorded (a snapshot's raw NVML
section), so a recorded machine can be replayed on one with no GPU.
"""

from __future__ import annotations

import ctypes
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Iterable

from gputriage.model.reading import Reading, Unavailable

CALL_TIMEOUT_S = 5.0

# NVML GPM metric ids (nvml.h, nvmlGpmMetricId_t)
GPM_GRAPHICS_UTIL = 1
GPM_SM_UTIL = 2
GPM_SM_OCCUPANCY = 3
GPM_ANY_TENSOR_UTIL = 5
GPM_DRAM_BW_UTIL = 10
GPM_FP64_UTIL = 11  # non-tensor math pipes: share of time the SMs did FP64, FP32, FP16 math
GPM_FP32_UTIL = 12
GPM_FP16_UTIL = 13
GPM_PCIE_TX_PER_SEC = 20
GPM_PCIE_RX_PER_SEC = 21
GPM_NVLINK_RX_PER_SEC = 60  # all links, MiB/s
GPM_NVLINK_TX_PER_SEC = 61
GPM_DEFAULT_METRICS = (
    GPM_GRAPHICS_UTIL,
    GPM_SM_UTIL,
    GPM_SM_OCCUPANCY,
    GPM_ANY_TENSOR_UTIL,
    GPM_DRAM_BW_UTIL,
    GPM_PCIE_TX_PER_SEC,
    GPM_PCIE_RX_PER_SEC,
)

# NVML field ids (nvml.h) and the scope that sums a counter over every link
FI_NVLINK_SPEED_MBPS_COMMON = 90  # the active links' speed, MB/s each way
FI_NVLINK_LINK_COUNT = 91
FI_NVLINK_DATA_TX_KIB = 138  # cumulative NVLink payload, KiB (Ampere and newer)
FI_NVLINK_DATA_RX_KIB = 139
ALL_LINKS = 0xFFFFFFFF
FIELD_VALUES = "nvmlDeviceGetFieldValues"


def field_key(field: int, scope: int) -> str:
    return f"{field}/{scope}"


# the per-sample counters: (row key, NVML function, extra arguments)
COUNTER_CALLS = (
    ("util", "nvmlDeviceGetUtilizationRates", ()),
    ("power", "nvmlDeviceGetPowerUsage", ()),
    ("sm_clk", "nvmlDeviceGetClockInfo", (1,)),  # NVML_CLOCK_SM
    ("reasons", "nvmlDeviceGetCurrentClocksEventReasons", ()),
)


def call_key(fn: str, index: int | None, args: tuple[Any, ...] = ()) -> str:
    key = fn if index is None else f"{fn}/{index}"
    if args:
        key += "/" + ",".join(str(a) for a in args)
    return key


def encode(reading: Reading) -> Any:
    """A reading as JSON: the value, or {"__unavailable__": {...}}."""
    if isinstance(reading, Unavailable):
        return {"__unavailable__": reading.to_json()}
    return reading


def decode(data: Any) -> Reading:
    if isinstance(data, dict) and "__unavailable__" in data:
        u = data["__unavailable__"]
        return Unavailable(u.get("reason", "error"), u.get("detail", ""))
    return data


class NvmlBackend:
    """Interface: what the collectors and the sampler may ask of NVML."""

    records: dict[str, Any]

    def init(self) -> Unavailable | None:  # pragma: no cover - interface
        raise NotImplementedError

    def shutdown(self) -> None:  # pragma: no cover - interface
        pass

    def call(self, fn: str, index: int | None = None, *args: Any) -> Reading:  # pragma: no cover
        raise NotImplementedError

    def gpu_counters(self, index: int) -> dict[str, Any]:
        """What a sampler reads every sample: {"util", "memutil", "power" (mW), "sm_clk" (MHz),
        "reasons" (clock-event bitmask)}; values NVML does not give are absent."""
        row: dict[str, Any] = {}
        for key, fn, args in COUNTER_CALLS:
            v = self.call(fn, index, *args)
            if isinstance(v, Unavailable):
                continue
            if key == "util":
                row["util"], row["memutil"] = v["gpu"], v["memory"]
            else:
                row[key] = v
        return row

    def process_samples(self, index: int, since_us: int) -> Reading:
        """NVML's per-process utilization samples of a GPU newer than `since_us` (its timestamps, µs)."""
        return self.call("nvmlDeviceGetProcessUtilization", index, since_us)

    def field_values(self, index: int, fields: Iterable[tuple[int, int]]) -> Reading:
        """NVML field values of a GPU, {"field/scope": number}; the fields it does not give are absent."""
        return self.call(FIELD_VALUES, index, *(field_key(f, s) for f, s in fields))

    def gpm_sample(self, index: int, into: Any = None) -> Reading:  # pragma: no cover - interface
        """A GPM sample; `into` is an earlier sample of this GPU whose buffer may be refilled."""
        raise NotImplementedError

    def gpm_metrics(
        self, index: int, first: Any, second: Any, metric_ids: Iterable[int] = GPM_DEFAULT_METRICS
    ) -> Reading:  # pragma: no cover
        raise NotImplementedError

    def gpm_free(self, sample: Any) -> None:  # pragma: no cover - interface
        pass


# nvmlValueType_t -> the member of nvmlValue_t that holds it
_FIELD_TYPES = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}


def _plain(obj: Any) -> Any:
    """Turn what pynvml returns (ctypes structs, arrays, bytes) into JSON-able values."""
    if isinstance(obj, (bool, int, float, str)) or obj is None:
        return obj
    if isinstance(obj, bytes):
        return obj.decode(errors="replace")
    if isinstance(obj, (list, tuple)):
        return [_plain(x) for x in obj]
    if isinstance(obj, ctypes.Array):
        return [_plain(x) for x in obj]
    if isinstance(obj, ctypes.Structure):
        return {name: _plain(getattr(obj, name)) for name, *_ in obj._fields_}
    if hasattr(obj, "value"):
        return _plain(obj.value)
    if hasattr(obj, "__dict__"):  # pynvml's nvmlFriendlyObject (process lists)
        return {k: _plain(v) for k, v in vars(obj).items() if not k.startswith("_")}
    return str(obj)


def _classify(exc: BaseException) -> Unavailable:
    import pynvml

    code = getattr(exc, "value", None)
    text = str(exc) or type(exc).__name__
    reasons = {
        pynvml.NVML_ERROR_LIBRARY_NOT_FOUND: "no_driver",
        pynvml.NVML_ERROR_DRIVER_NOT_LOADED: "no_driver",
        pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH: "driver_mismatch",
        pynvml.NVML_ERROR_GPU_IS_LOST: "gpu_lost",
        pynvml.NVML_ERROR_NOT_SUPPORTED: "not_supported",
        pynvml.NVML_ERROR_FUNCTION_NOT_FOUND: "not_supported",
        pynvml.NVML_ERROR_NO_PERMISSION: "no_permission",
        pynvml.NVML_ERROR_NOT_FOUND: "not_found",
        pynvml.NVML_ERROR_GPU_NOT_FOUND: "not_found",
        pynvml.NVML_ERROR_TIMEOUT: "timeout",
    }
    return Unavailable(reasons.get(code, "error"), text)


class PynvmlBackend(NvmlBackend):
    """The real NVML. Each call is bounded in time; a hung driver call turns into `timeout`."""

    def __init__(self, timeout_s: float = CALL_TIMEOUT_S, record: bool = True, bounded: bool = True) -> None:
        """`bounded=False` calls NVML on the caller's thread (the sampler's own daemon thread, where a
        hung call stalls only sampling and a thread hand-off per call would cost more than the call)."""
        self.timeout_s = timeout_s
        self.bounded = bounded
        self.record = record
        self.records: dict[str, Any] = {}
        self._handles: dict[int, Any] = {}
        self._gpm_supported: dict[int, bool] = {}
        self._counters: dict[int, list[tuple[str, Any, tuple[Any, ...]]]] = {}  # per GPU: the calls that answer
        self._gpm_requests: dict[tuple[int, ...], Any] = {}
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nvml")
        self._stuck = False

    def _bounded(self, func: Any, *args: Any) -> Reading:
        if not self.bounded:
            try:
                return func(*args)
            except Exception as exc:
                if type(exc).__name__.startswith("NVMLError") or hasattr(exc, "value"):
                    return _classify(exc)
                return Unavailable("error", f"{type(exc).__name__}: {exc}")
        if self._stuck:
            return Unavailable("timeout", "an earlier NVML call never returned")
        future = self._pool.submit(func, *args)
        try:
            return future.result(timeout=self.timeout_s)
        except FutureTimeout:
            self._stuck = True
            return Unavailable("timeout", f"NVML call did not return within {self.timeout_s:.0f} s")
        except Exception as exc:  # NVMLError and ctypes errors alike
            if type(exc).__name__.startswith("NVMLError") or hasattr(exc, "value"):
                return _classify(exc)
            return Unavailable("error", f"{type(exc).__name__}: {exc}")

    def init(self) -> Unavailable | None:
        try:
            import pynvml
        except ImportError as exc:  # pragma: no cover - a dependency
            return Unavailable("not_installed", f"nvidia-ml-py: {exc}")
        result = self._bounded(pynvml.nvmlInit)
        if isinstance(result, Unavailable):
            self.records["nvmlInit"] = encode(result)
            return result
        self.records["nvmlInit"] = None
        return None

    def shutdown(self) -> None:
        import pynvml

        self._bounded(pynvml.nvmlShutdown)
        self._pool.shutdown(wait=False)

    def _handle(self, index: int) -> Reading:
        if index not in self._handles:
            import pynvml

            h = self._bounded(pynvml.nvmlDeviceGetHandleByIndex, index)
            if isinstance(h, Unavailable):
                return h
            self._handles[index] = h
        return self._handles[index]

    def call(self, fn: str, index: int | None = None, *args: Any) -> Reading:
        import pynvml

        func = getattr(pynvml, fn, None)
        if func is None:
            result: Reading = Unavailable("not_supported", f"{fn} is not in this nvidia-ml-py")
        elif index is None:
            result = self._bounded(lambda: _plain(func(*args)))
        else:
            handle = self._handle(index)
            if isinstance(handle, Unavailable):
                result = handle
            else:
                result = self._bounded(lambda: _plain(func(handle, *args)))
        if self.record:
            self.records[call_key(fn, index, args)] = encode(result)
        return result

    def gpu_counters(self, index: int) -> dict[str, Any]:
        """The per-sample counters, called straight through nvidia-ml-py on the caller's thread (at
        10 Hz the generic `call` path costs as much CPU as the driver); a counter the GPU does not
        support is asked once, then left out."""
        if self.bounded or self.record:
            return super().gpu_counters(index)
        import pynvml

        handle = self._handle(index)
        if isinstance(handle, Unavailable):
            return {}
        calls = self._counters.get(index)
        if calls is None:
            calls = self._counters[index] = [
                (key, getattr(pynvml, fn), args) for key, fn, args in COUNTER_CALLS if hasattr(pynvml, fn)
            ]
        row: dict[str, Any] = {}
        for entry in list(calls):
            key, fn, args = entry
            try:
                v = fn(handle, *args)
            except pynvml.NVMLError as exc:
                if exc.value in (pynvml.NVML_ERROR_NOT_SUPPORTED, pynvml.NVML_ERROR_FUNCTION_NOT_FOUND):
                    calls.remove(entry)
                continue
            if key == "util":
                row["util"], row["memutil"] = v.gpu, v.memory
            else:
                row[key] = int(v)
        return row

    def process_samples(self, index: int, since_us: int) -> Reading:
        """As the interface's, recorded under the key a replay answers from (whatever timestamp it asks)."""
        result = super().process_samples(index, since_us)
        if self.record:
            fn = "nvmlDeviceGetProcessUtilization"
            self.records.pop(call_key(fn, index, (since_us,)), None)
            self.records[call_key(fn, index)] = encode(result)
        return result

    def field_values(self, index: int, fields: Iterable[tuple[int, int]]) -> Reading:
        import pynvml

        asked = list(fields)
        handle = self._handle(index)
        if isinstance(handle, Unavailable):
            return handle

        def read() -> dict[str, float]:
            values = pynvml.nvmlDeviceGetFieldValues(handle, asked)
            out: dict[str, float] = {}
            for (f, s), v in zip(asked, values):
                if v.nvmlReturn == 0:
                    out[field_key(f, s)] = float(getattr(v.value, _FIELD_TYPES.get(v.valueType, "ullVal")))
            return out

        result = self._bounded(read)
        if self.record:  # under the key the generic call gives it, so a replay answers through `call`
            self.records[call_key(FIELD_VALUES, index, tuple(field_key(f, s) for f, s in asked))] = encode(result)
        return result

    def gpm_sample(self, index: int, into: Any = None) -> Reading:
        import pynvml

        handle = self._handle(index)
        if isinstance(handle, Unavailable):
            return handle

        def take() -> Any:
            if index not in self._gpm_supported:  # asked once per GPU, not every sample
                self._gpm_supported[index] = bool(pynvml.nvmlGpmQueryDeviceSupport(handle).isSupportedDevice)
            if not self._gpm_supported[index]:
                raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
            sample = into[0] if isinstance(into, tuple) else pynvml.nvmlGpmSampleAlloc()
            try:
                pynvml.nvmlGpmSampleGet(handle, sample)
            except Exception:
                if not isinstance(into, tuple):  # a refilled buffer stays its owner's to free
                    pynvml.nvmlGpmSampleFree(sample)
                raise
            return (sample, time.monotonic())

        result = self._bounded(take)
        if isinstance(result, Unavailable) and self.record:
            self.records[f"gpm/{index}"] = encode(result)
        return result

    def gpm_metrics(
        self, index: int, first: Any, second: Any, metric_ids: Iterable[int] = GPM_DEFAULT_METRICS
    ) -> Reading:
        import pynvml

        ids = list(metric_ids)

        def compute() -> dict[str, Any]:
            req = self._gpm_requests.get(tuple(ids))  # one request per metric list, reused
            if req is None:
                req = self._gpm_requests[tuple(ids)] = pynvml.c_nvmlGpmMetricsGet_t()
            req.version = pynvml.NVML_GPM_METRICS_GET_VERSION
            req.numMetrics = len(ids)
            req.sample1 = first[0]
            req.sample2 = second[0]
            for i, mid in enumerate(ids):
                req.metrics[i].metricId = mid
            pynvml.nvmlGpmMetricsGet(req)
            values = {
                str(req.metrics[i].metricId): float(req.metrics[i].value)
                for i in range(len(ids))
                if req.metrics[i].nvmlReturn == 0
            }
            return {"window_ms": 1000.0 * (second[1] - first[1]), "metrics": values}

        result = self._bounded(compute)
        if self.record:
            self.records[f"gpm/{index}"] = encode(result)
        return result

    def gpm_free(self, sample: Any) -> None:
        import pynvml

        if isinstance(sample, tuple):
            self._bounded(pynvml.nvmlGpmSampleFree, sample[0])
