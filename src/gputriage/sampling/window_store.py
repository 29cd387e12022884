"""The windows of a run, stored columnar: one time axis and the host's figures, and each GPU's figures, in float32
(NaN where a figure is missing); past the store's capacity, neighbouring windows merged by pairs on a grid twice as
coarse. `WindowSeries` is one GPU's view of them, as the judges read it (`model.window.Windows`)."""

from __future__ import annotations

import math
from array import array
from typing import Iterator

from gputriage.model.window import GPU_FIELDS, HOST_FIELDS, WindowMetrics

_MAX_FIELDS = {
    "util_max_pct",
    "sm_active_max_pct",
    "power_max_w",
    "temperature_max_c",
    "used_max_bytes",
    "neighbours",
    "job_computing",
    "job_gpu_processes",
    "job_gpus",
    "steps_total",
    "samples_total",
    "tokens_total",
    "ooms_total",
    "oom_requested_bytes",
    "progress_dt_s",
    "swap_in_max_pages_per_s",
    "workload_vram_max_bytes",
    "workload_rss_max_bytes",
    "loader_workers",
}


_MIN_FIELDS = {"mem_available_min_bytes", "workload_cores"}


NAN = float("nan")


class Store:
    """Every window of a run, columnar: one time axis and the host's figures, and each GPU's figures. Windows
    lie on a grid of `window_s` from the first window's start; `window_s` doubles at each compaction."""

    def __init__(self, gpus: list[int], window_s: float, capacity: int) -> None:
        if capacity < 2:
            raise ValueError(f"a store keeps at least 2 windows (capacity {capacity})")
        self.window_s, self.capacity = window_s, capacity
        self.t0 = array("d")
        self.t1 = array("d")
        self.samples = array("I")
        self.host = {name: array("f") for name in HOST_FIELDS}
        self.gpus = {g: {name: array("f") for name in GPU_FIELDS} for g in gpus}

    def append(
        self, t0: float, t1: float, samples: int, host: dict[str, float], gpus: dict[int, dict[str, float]]
    ) -> None:
        self.t0.append(t0)
        self.t1.append(t1)
        self.samples.append(samples)
        for name, col in self.host.items():
            col.append(host.get(name, NAN))
        for g, cols in self.gpus.items():
            values = gpus.get(g, {})
            for name, col in cols.items():
                col.append(values.get(name, NAN))
        # compacted when the window just closed ends on the coarser grid (the next window then starts a slot
        # of its own); one window later whatever the edge, for samples with gaps that never end there
        if len(self.t0) > self.capacity + 1 or (len(self.t0) > self.capacity and self.on_grid(t1, 2 * self.window_s)):
            while len(self.t0) > self.capacity:
                self._compact()

    def on_grid(self, t: float, window_s: float) -> bool:
        """Whether `t` is an edge of a grid of `window_s` from the first window's start."""
        k = (t - self.t0[0]) / window_s
        return abs(k - round(k)) < 1e-6

    def _compact(self) -> None:
        """Merge the windows of each slot of a grid twice as coarse: means of medians and shares, maxima of
        maxima, minima of minima."""
        window_s = 2 * self.window_s
        origin = self.t0[0]
        groups: list[list[int]] = []
        last = None
        for i, t0 in enumerate(self.t0):
            slot = math.floor((t0 - origin) / window_s + 1e-9)
            if slot == last:
                groups[-1].append(i)
            else:
                groups.append([i])
                last = slot
        self.t0 = array("d", [self.t0[g[0]] for g in groups])
        self.t1 = array("d", [self.t1[g[-1]] for g in groups])
        self.samples = array("I", [sum(self.samples[i] for i in g) for g in groups])
        for cols in (self.host, *self.gpus.values()):
            for name, col in cols.items():
                pick = _nanmax if name in _MAX_FIELDS else _nanmin if name in _MIN_FIELDS else _nanmean
                cols[name] = array("f", [pick([col[i] for i in g]) for g in groups])
        self.window_s = window_s

    def memory_bytes(self) -> int:
        arrays: list[array] = [self.t0, self.t1, self.samples, *self.host.values()]
        arrays += [col for cols in self.gpus.values() for col in cols.values()]
        return sum(a.itemsize * len(a) for a in arrays)


class WindowSeries:
    """One GPU's windows (the host's figures included), oldest first; or, for `gpu` None, the host's."""

    def __init__(self, store: Store, gpu: int | None) -> None:
        self.store, self.gpu = store, gpu

    @property
    def ends_s(self) -> array:
        return self.store.t1

    @property
    def window_s(self) -> float:
        return self.store.window_s

    @property
    def samples(self) -> array:
        return self.store.samples

    def _cols(self) -> dict[str, array]:
        own = self.store.gpus[self.gpu] if self.gpu is not None else {}
        return {**own, **self.store.host}

    def __len__(self) -> int:
        return len(self.store.t0)

    def column(self, name: str) -> list[float | None]:
        return [None if math.isnan(v) else float(v) for v in self._cols()[name]]

    def __getitem__(self, i: int) -> WindowMetrics:
        values = {name: float(col[i]) for name, col in self._cols().items() if not math.isnan(col[i])}
        return WindowMetrics(t0_s=self.store.t0[i], t1_s=self.store.t1[i], samples=self.store.samples[i], **values)

    def __iter__(self) -> Iterator[WindowMetrics]:
        cols = self._cols()
        t0, t1, n = self.store.t0, self.store.t1, self.store.samples
        for i in range(len(t0)):
            values = {name: float(col[i]) for name, col in cols.items() if not math.isnan(col[i])}
            yield WindowMetrics(t0_s=t0[i], t1_s=t1[i], samples=n[i], **values)


def _known(values: list[float]) -> list[float]:
    return [v for v in values if not math.isnan(v)]


def _nanmean(values: list[float]) -> float:
    known = _known(values)
    return sum(known) / len(known) if known else NAN


def _nanmin(values: list[float]) -> float:
    return min(_known(values), default=NAN)


def _nanmax(values: list[float]) -> float:
    return max(_known(values), default=NAN)
