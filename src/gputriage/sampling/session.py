"""One monitored session (a `run`, a `watch`, a `monitor()` block): the GPUs' static facts, the
sampler feeding the windows, the ring of recent samples and the store; at the end, a `Recording`
for the judge. Nothing here judges."""

from __future__ import annotations

import platform
import socket
import sqlite3
import sys
import time
from typing import Any, Iterable

from gputriage.backends.cgroup import owner
from gputriage.backends.gpu_libraries import installed
from gputriage.backends.host import Host
from gputriage.backends.nvml import FI_NVLINK_LINK_COUNT, FI_NVLINK_SPEED_MBPS_COMMON, NvmlBackend, field_key
from gputriage.model.owner import ProcessOwner
from gputriage.model.reading import Unavailable
from gputriage.model.recording import Recording
from gputriage.model.run import GpuStatic, RunMeta, RunReport
from gputriage.model.sample import Sample
from gputriage.model.version import __version__
from gputriage.sampling.holders import Holders
from gputriage.sampling.rank_windows import RankWindows
from gputriage.sampling.sampler import Cadences, Sampler, default_period
from gputriage.sampling.store import Store, StoreError
from gputriage.sampling.windows import Windower

ENV_KEYS = (
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "PYTORCH_CUDA_ALLOC_CONF",
    "OMP_NUM_THREADS",
    "CUDA_LAUNCH_BLOCKING",
)


def _value(reading: Any) -> Any:
    return None if isinstance(reading, Unavailable) else reading


def gpu_static(nvml: NvmlBackend) -> tuple[list[int], dict[int, GpuStatic], dict[str, Any]]:
    """The GPUs NVML sees and what does not change during a run."""
    failed = nvml.init()
    if failed is not None:
        return [], {}, {"nvml": str(failed)}
    count = _value(nvml.call("nvmlDeviceGetCount")) or 0
    info: dict[int, GpuStatic] = {}
    for i in range(count):
        mem = _value(nvml.call("nvmlDeviceGetMemoryInfo", i)) or {}
        info[i] = GpuStatic(
            name=_value(nvml.call("nvmlDeviceGetName", i)),
            uuid=_value(nvml.call("nvmlDeviceGetUUID", i)),
            memory_total_bytes=mem.get("total"),
            power_limit_mw=_value(nvml.call("nvmlDeviceGetEnforcedPowerLimit", i)),
            power_default_mw=_value(nvml.call("nvmlDeviceGetPowerManagementDefaultLimit", i)),
            sm_max_mhz=_value(nvml.call("nvmlDeviceGetMaxClockInfo", i, 1)),
            pcie_gen_max=_value(nvml.call("nvmlDeviceGetMaxPcieLinkGeneration", i)),
            pcie_width_max=_value(nvml.call("nvmlDeviceGetMaxPcieLinkWidth", i)),
            pcie_gen_current=_value(nvml.call("nvmlDeviceGetCurrPcieLinkGeneration", i)),
            pcie_width_current=_value(nvml.call("nvmlDeviceGetCurrPcieLinkWidth", i)),
        )
        links = nvml.field_values(i, ((FI_NVLINK_LINK_COUNT, 0), (FI_NVLINK_SPEED_MBPS_COMMON, 0)))
        if isinstance(links, dict) and links.get(field_key(FI_NVLINK_LINK_COUNT, 0)):
            info[i].nvlink_links = int(links[field_key(FI_NVLINK_LINK_COUNT, 0)])
            info[i].nvlink_link_mb_per_s = links.get(field_key(FI_NVLINK_SPEED_MBPS_COMMON, 0))
        ecc = _value(nvml.call("nvmlDeviceGetEccMode", i))
        if isinstance(ecc, (list, tuple)) and ecc:
            info[i].ecc = bool(ecc[0])
    system = {
        "driver": _value(nvml.call("nvmlSystemGetDriverVersion")),
        "cuda_driver": _value(nvml.call("nvmlSystemGetCudaDriverVersion_v2")),
    }
    try:  # the torch of this environment (a Python workload started here imports it), read without importing it
        from importlib.metadata import version

        system["torch"] = version("torch")
    except Exception:  # not installed, or unreadable metadata: no torch to name
        pass
    system["gpu_libraries"] = installed()  # the libraries beside torch and the frameworks, with their CUDA builds
    return list(range(count)), info, system


def run_meta(gpus: dict[int, GpuStatic], system: dict[str, Any], host: Host, period_s: float) -> RunMeta:
    env = {k: host.environ[k] for k in ENV_KEYS if k in host.environ}
    return RunMeta(
        hostname=socket.gethostname(),
        gputriage=__version__,
        python=sys.version.split()[0],
        platform=platform.platform(),
        cwd=host.cwd,
        period_s=period_s,
        gpus={str(k): v for k, v in gpus.items()},
        system=system,
        env=env,
    )


def replay(
    samples: Iterable[Sample],
    meta: RunMeta,
    kind: str = "run",
    command: list[str] | None = None,
    run_id: int | None = None,
) -> Recording:
    """A recording rebuilt from stored samples (a run whose gputriage died, a recorded fixture)."""
    gpus = [int(k) for k in meta.gpus]
    windows = Windower(gpus)
    ranks = RankWindows(node=meta.hostname)
    for s in samples:
        windows.add(s)
        ranks.add(s)
    windows.close()
    rec = Recording(kind=kind, command=list(command or []), meta=meta, gpus=gpus, windows=windows, run_id=run_id)
    rec.ranks, rec.hangs = ranks.series(), ranks.hangs
    return rec


class Session:
    """Sampler → windows, ring and store."""

    def __init__(
        self,
        nvml: NvmlBackend,
        host: Host,
        store: Store | None,
        kind: str,
        command: list[str],
        period_s: float | None = None,
        use_gpm: bool = True,
    ) -> None:
        self.nvml, self.host, self.store = nvml, host, store
        self.gpus, static, self.system = gpu_static(nvml)
        self.cadences = Cadences(gpu_s=period_s or default_period(nvml, self.gpus))
        self.kind, self.command = kind, command
        self.run_id: int | None = None
        self.store_error: str | None = None
        self._recording: Recording | None = None
        self.windows = Windower(self.gpus)
        self.ranks = RankWindows()  # a distributed job's ranks (`run` of a launcher)
        self.sampler = Sampler(
            nvml,
            host,
            self.gpus,
            cadences=self.cadences,
            sinks=(self.windows.add, self.ranks.add),
            batch_sinks=(self._to_store,),
            use_gpm=use_gpm,
        )
        for reader in self.sampler.gpus:
            static[reader.index].gpm = reader.gpm_ok
        self.meta = run_meta(static, self.system, host, self.cadences.gpu_s)

    def open(self) -> None:
        """Record the run in the store: before the workload starts, so a store that cannot be written
        fails now (StoreError), not with the workload running."""
        if self.store is None:
            return
        self.store.check_writable()
        try:
            self.run_id = self.store.begin_run(self.kind, self.command, self.meta)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write the run store {self.store.path}: {exc}") from None

    def _to_store(self, batch: list[Sample]) -> None:
        if self.store is None or self.run_id is None:
            return
        try:
            self.store.add_samples(self.run_id, batch)
        except sqlite3.Error as exc:  # keep sampling in memory: the run's report does not need the store
            self.store_error = f"the run store stopped taking samples ({exc}): this run is judged from memory"
            self.store = None

    def start(self, pid: int | None = None) -> None:
        """Start sampling (the workload's process tree if `pid`)."""
        if pid is not None:
            self.sampler.pid = pid
        else:  # a watch: every process on the GPUs is what is watched, each named once
            self.sampler.holders = Holders(self.nvml, self.host, self.gpus)
        self.sampler.start()

    def wait_for_a_sample(self) -> None:
        """Until the sampler has taken one more sample (two periods at most): what the workload reported just now
        (its last step, its allocator's last counts) is then in the recording."""
        seen = self.sampler.count
        deadline = time.monotonic() + 2 * self.cadences.gpu_s + 0.5
        while self.sampler.count == seen and time.monotonic() < deadline:
            time.sleep(min(0.01, self.cadences.gpu_s / 4))

    def finish(self) -> Recording:
        """Stop sampling, shut NVML down; what was recorded (the same on a second call)."""
        if self._recording is None:
            self.sampler.stop()
            self.windows.close()
            self.nvml.shutdown()
            self._recording = Recording(
                kind=self.kind,
                command=self.command,
                meta=self.meta,
                gpus=self.gpus,
                windows=self.windows,
                recent=list(self.sampler.recent),
                run_id=self.run_id,
                store_error=self.store_error,
                owners=self._owners(),
                ranks=self.ranks.series(),
                hangs=list(self.ranks.hangs),
            )
        return self._recording

    def _owners(self) -> dict[int, ProcessOwner]:
        """Who each process seen on the GPUs is: as looked up when first seen (a watch), else now, for those
        still running (one that has exited cannot be named any more)."""
        owners = dict(self.sampler.holders.owners) if self.sampler.holders is not None else {}
        for p in self.windows.processes():
            if p.pid not in owners:
                o = owner(self.host, p.pid)
                if o.visible and not o.note:
                    owners[p.pid] = o
        return owners

    def discard(self) -> None:
        """Take the run back out of the store: nothing ran (its command could not start)."""
        if self.store is None or self.run_id is None:
            return
        try:
            self.store.discard_run(self.run_id)
        except sqlite3.Error:
            pass  # left as a run without an end: `runs` shows it cut, nothing worse
        self.run_id = None

    def save(self, report: RunReport) -> None:
        """Keep the judged run in the store (a failure is said in the report's `store_error`)."""
        if self.store is None or report.id is None:
            return
        try:
            self.store.end_run(report)
        except sqlite3.Error as exc:
            self.store_error = f"the run store could not keep this run's report ({exc})"
