"""The real backend's per-sample path, with nvidia-ml-py's functions stood in for the driver."""

from __future__ import annotations

from types import SimpleNamespace

import pynvml
import pytest

from gputriage.backends.nvml import PynvmlBackend


@pytest.fixture
def driver(monkeypatch):
    asked: dict[str, int] = {}

    def answer(name, value):
        def fn(handle, *args):
            asked[name] = asked.get(name, 0) + 1
            if isinstance(value, Exception):
                raise value
            return value

        monkeypatch.setattr(pynvml, name, fn)

    answer("nvmlDeviceGetUtilizationRates", SimpleNamespace(gpu=87, memory=31))
    answer("nvmlDeviceGetPowerUsage", pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED))
    answer("nvmlDeviceGetClockInfo", 1980)
    answer("nvmlDeviceGetCurrentClocksEventReasons", pynvml.NVMLError(pynvml.NVML_ERROR_UNKNOWN))
    return asked


def backend(**kw) -> PynvmlBackend:
    b = PynvmlBackend(**kw)
    b._handles[0] = object()  # no driver here: a handle stands in
    return b


def test_the_per_sample_counters_read_as_the_generic_calls_do(driver):
    fast = backend(record=False, bounded=False).gpu_counters(0)
    generic = backend(record=True, bounded=False).gpu_counters(0)
    assert fast == generic == {"util": 87, "memutil": 31, "sm_clk": 1980}


def test_an_unsupported_counter_is_asked_once_a_failing_one_again(driver):
    b = backend(record=False, bounded=False)
    for _ in range(3):
        b.gpu_counters(0)
    assert driver["nvmlDeviceGetPowerUsage"] == 1  # not supported: left out after the first sample
    assert driver["nvmlDeviceGetCurrentClocksEventReasons"] == 3  # a transient error: asked every sample
    assert driver["nvmlDeviceGetUtilizationRates"] == 3
