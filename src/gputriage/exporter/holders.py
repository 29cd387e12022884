"""The processes holding the GPUs, for a scrape: read every few seconds (`sampling.holders.Holders`: NVML's
list, each process's share of the GPU's time, who it is), with how long each has held memory and run no kernel
(`sampling.idle_streaks`), judged idle-held by the function the exporter is given (diagnosis.idle_held.judge_live)."""

from __future__ import annotations

from typing import Callable, Mapping

from gputriage.backends.host import Host
from gputriage.backends.nvml import NvmlBackend
from gputriage.model.exporter import HeldProcess
from gputriage.model.run import GpuStatic
from gputriage.sampling.holders import Holders
from gputriage.sampling.idle_streaks import IdleStreaks

READ_EVERY_S = 5.0  # NVML's process list and per-process utilization: one call each per GPU this often

# the processes, with each one's idle stretch so far -> the same, `idle_held` and `idle_gpu_hours` set
Judge = Callable[[list[HeldProcess], Mapping[int, GpuStatic]], list[HeldProcess]]


class HolderTracker:
    def __init__(
        self,
        nvml: NvmlBackend,
        host: Host | None,
        gpus: list[int],
        static: Mapping[int, GpuStatic],
        judge: Judge | None = None,
    ) -> None:
        self.holders = Holders(nvml, host, gpus)
        self.static, self.judge = static, judge
        self.held: list[HeldProcess] = []
        self._streaks = IdleStreaks()
        self._read_s: float | None = None

    def update(self, now_s: float) -> list[HeldProcess]:
        """Read again if `READ_EVERY_S` of the samples' time went by since the last read; the processes now."""
        if self._read_s is not None and now_s - self._read_s < READ_EVERY_S:
            return self.held
        self._read_s = now_s
        procs = self.holders.read()
        self._streaks.forget({(p.gpu, p.pid) for p in procs})
        held = []
        for p in procs:
            self._streaks.add((p.gpu, p.pid), now_s, p.used_bytes, p.sm_util_pct)
            stretch = self._streaks.current((p.gpu, p.pid), now_s)
            held.append(
                HeldProcess(
                    gpu=p.gpu,
                    pid=p.pid,
                    used_bytes=p.used_bytes,
                    sm_util_pct=p.sm_util_pct,
                    idle_s=round(stretch[0], 1) if stretch else 0.0,
                    owner=self.holders.owners.get(p.pid),
                )
            )
        self.held = self.judge(held, self.static) if self.judge is not None else held
        return self.held
