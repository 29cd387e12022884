"""Every process holding a sampled GPU, each with its share of the GPU's time since the last reading (NVML
per-process utilization), and who it is (`backends.cgroup.owner`, looked up once per pid): what `watch` and the
exporter list, with no workload of their own to tell apart from the rest."""

from __future__ import annotations

from gputriage.backends.cgroup import owner
from gputriage.backends.host import Host
from gputriage.backends.nvml import NvmlBackend
from gputriage.backends.nvml_queries import compute_processes, process_sm_util
from gputriage.model.owner import ProcessOwner
from gputriage.model.sample import GpuProcess

MAX_OWNERS = 256  # pids looked up and kept (a machine forking CUDA processes without end stays bounded)


class Holders:
    def __init__(self, nvml: NvmlBackend, host: Host | None, gpus: list[int]) -> None:
        """`host` None: the processes are not looked up (no owners)."""
        self.nvml, self.host, self.gpus = nvml, host, gpus
        self.owners: dict[int, ProcessOwner] = {}
        self._since_us: dict[int, int] = {}

    def read(self) -> list[GpuProcess]:
        """The compute processes on the GPUs, each with its SM utilization since the last read (None where the
        GPU does not give it; 0 for a process that ran no kernel since)."""
        out: list[GpuProcess] = []
        for i, procs in compute_processes(self.nvml, self.gpus).items():
            util: dict[int, float] | None = None
            if procs:
                got = process_sm_util(self.nvml, i, self._since_us.get(i, 0))
                if got is not None:
                    util, self._since_us[i] = got
            for p in procs:
                out.append(
                    GpuProcess(
                        gpu=i,
                        pid=p["pid"],
                        used_bytes=p["used_bytes"],
                        sm_util_pct=util.get(p["pid"], 0.0) if util is not None else None,
                    )
                )
                self._look_up(p["pid"])
        return out

    def _look_up(self, pid: int) -> None:
        if self.host is None or pid in self.owners or len(self.owners) >= MAX_OWNERS:
            return
        self.owners[pid] = owner(self.host, pid)
