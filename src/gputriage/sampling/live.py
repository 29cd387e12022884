"""The last second of a live sampler, per GPU, as a window a judge reads (`model.window.WindowMetrics`): the
figures of its samples, with the CPU of the processes on that GPU (what tells a Python-bound server from a
starved input pipeline). `watch` and the exporter both read the last second here and name it with
`diagnosis.run.live`, so the two never label one second differently."""

from __future__ import annotations

from typing import Sequence

import msgspec

from gputriage.backends.nvml import NvmlBackend
from gputriage.backends.nvml_queries import compute_processes
from gputriage.backends.process_cpu import ProcessCpuReader, ProcessesCpu
from gputriage.model.sample import GpuProcess, Sample
from gputriage.model.window import WindowMetrics
from gputriage.sampling.windows import metrics_of

LAST_S = 1.0  # the live window: the samples of the last second
PROCESSES_EVERY_S = 5.0  # how often the processes on the GPUs are listed again (an NVML call per GPU)


class LastSecond:
    """Call `metrics(recent)` with the sampler's recent samples, as often as wanted: the processes on the GPUs
    are listed every `PROCESSES_EVERY_S` and their CPU read at most once per `LAST_S` of the samples' time
    (between two reads it stays as last read), so how often a caller asks does not change the answer."""

    def __init__(self, nvml: NvmlBackend | None, gpus: list[int]) -> None:
        """`nvml` None: no process is listed (the figures of the samples alone)."""
        self.nvml, self.gpus = nvml, gpus
        self.processes: list[GpuProcess] = []
        self._readers = {i: ProcessCpuReader() for i in gpus}
        self._cpu: dict[int, ProcessesCpu | None] = {}
        self._listed_s: float | None = None
        self._cpu_s: float | None = None

    def _list_processes(self) -> None:
        if self.nvml is None or not self.gpus:
            return
        listed = compute_processes(self.nvml, self.gpus)
        self.processes = [
            GpuProcess(gpu=i, pid=p["pid"], used_bytes=p.get("used_bytes")) for i, ps in listed.items() for p in ps
        ]

    def _read_cpu(self) -> None:
        self._cpu = {
            i: reader.read([p.pid for p in self.processes if p.gpu == i]) for i, reader in self._readers.items()
        }

    def metrics(self, recent: Sequence[Sample]) -> dict[int, WindowMetrics]:
        """Each GPU's last second ({} before any sample)."""
        if not recent:
            return {}
        now_s = recent[-1].t_s
        if self._listed_s is None or not 0 <= now_s - self._listed_s < PROCESSES_EVERY_S:  # (a clock set back)
            self._list_processes()
            self._listed_s = now_s
        if self._cpu_s is None or not 0 <= now_s - self._cpu_s < LAST_S:
            self._read_cpu()
            self._cpu_s = now_s
        last = [s for s in recent if s.t_s >= now_s - LAST_S]
        return {i: with_processes_cpu(metrics_of(last, i), self._cpu.get(i)) for i in self.gpus}


def with_processes_cpu(m: WindowMetrics, cpu: ProcessesCpu | None) -> WindowMetrics:
    """A window's figures with the CPU of the processes on its GPU, where it was read and no workload was
    sampled (a sampled workload's own figures stand: `monitor()` of a process)."""
    if cpu is None or m.workload_cpu_pct is not None:
        return m
    return msgspec.structs.replace(
        m,
        workload_cpu_pct=cpu.cpu_pct,
        top_thread_pct=cpu.top_thread_pct,
        read_mb_per_s=cpu.read_mb_per_s,
        job_gpu_processes=cpu.processes,
    )
