"""A sampling thread: per GPU (NVML + GPM), per host (/proc), per workload process tree (psutil).

Each counter is read at the rate that carries information, in seconds (`Cadences`), whatever the
tick: the GPU's counters and GPM every `period_s` (by default the driver's own GPU-Util refresh,
200 ms on an H200: reading faster returns the same value; GPM averages over any interval); the
GPU's memory and temperature, the host's CPU, memory, swap, disk and network, and the workload's
CPU, threads, I/O and VRAM every second; the other processes on the GPUs every 2 s; the workload's
process tree every 5 s (a scan of /proc). A sample carries the last value of what was not read on
its tick. Samples go to the sinks as they are taken (the windower) and in batches about once a
second (the store); the sampler keeps only the last `ring_s` seconds of them, so its memory is
bounded whatever the run's length.
"""

from __future__ import annotations

import collections
import functools
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import msgspec

from gputriage.backends.cpu_allowance import usable_cores
from gputriage.backends.host import Host
from gputriage.backends.nvml import NvmlBackend
from gputriage.backends.nvml_queries import compute_processes, process_sm_util, util_refresh_s
from gputriage.backends.process_tree import ProcessDetail, ProcessTree, rates
from gputriage.backends.procfs import cpu_busy_pct, keyed_values, parse_diskstats, parse_net_dev, parse_proc_stat
from gputriage.model.sample import GpuProcess, HostSample, RankSample, Sample, WorkloadSample
from gputriage.sampling.gpu_reader import GpuReader
from gputriage.sampling.holders import Holders
from gputriage.sampling.loader_workers import loader_fields, workers
from gputriage.sampling.progress import ProgressReader
from gputriage.sampling.rank_reader import RankReader

DEFAULT_PERIOD_S = 0.2  # the GPU-Util refresh of recent datacenter GPUs, when the driver does not say
MIN_PERIOD_S, MAX_PERIOD_S = 0.02, 10.0


@dataclass(frozen=True)
class Cadences:
    """Seconds between two reads of each group of readings."""

    gpu_s: float = DEFAULT_PERIOD_S  # utilization, power, SM clock, clock-event reasons, GPM
    gpu_slow_s: float = 1.0  # memory used, temperature
    host_s: float = 1.0  # per-core CPU, iowait, memory, swap, faults, disk, network
    workload_s: float = 1.0  # the process tree's CPU, busiest thread, RSS, I/O, VRAM
    neighbours_s: float = 2.0  # other processes on the GPUs
    tree_s: float = 5.0  # re-scan of the workload's descendants
    batch_s: float = 1.0  # samples handed to the batch sinks (the store)
    ring_s: float = 600.0  # samples kept in memory

    def every(self, seconds: float) -> int:
        """Ticks between two reads of something read every `seconds`."""
        return max(1, round(seconds / self.gpu_s))


def default_period(nvml: NvmlBackend, gpus: list[int]) -> float:
    """The driver's GPU-Util refresh period (the slowest of the GPUs'), within [0.1, 1] s."""
    periods = [p for p in (util_refresh_s(nvml, i) for i in gpus) if p]
    return min(1.0, max(0.1, max(periods))) if periods else DEFAULT_PERIOD_S


class HostReader:
    """Per-core CPU, iowait, memory, swap, faults, disk and network rates, every `every` ticks (the
    same object is carried in between)."""

    def __init__(self, host: Host, every: int = 5) -> None:
        self.host, self.every = host, every
        self._prev: dict[str, Any] | None = None
        self._tick = 0
        self._last = HostSample()

    def read(self) -> HostSample:
        if self._tick % self.every == 0:
            self._last = self._read()
        self._tick += 1
        return self._last

    def _read(self) -> HostSample:
        h = self.host
        cur: dict[str, Any] = {"t": time.monotonic()}
        for key, path in (
            ("stat", "/proc/stat"),
            ("vmstat", "/proc/vmstat"),
            ("meminfo", "/proc/meminfo"),
            ("disk", "/proc/diskstats"),
            ("net", "/proc/net/dev"),
        ):
            cur[key] = h.reread(path)
        h.records.clear()  # the sampler must not grow the recording
        prev, self._prev = self._prev, cur
        out: dict[str, Any] = {}
        if isinstance(cur["meminfo"], str):
            kb = keyed_values(cur["meminfo"], ("MemAvailable", "SwapTotal", "SwapFree"))
            out["mem_available_bytes"] = kb.get("MemAvailable", 0) * 1024
            out["swap_used_bytes"] = (kb.get("SwapTotal", 0) - kb.get("SwapFree", 0)) * 1024
        if prev is None:
            return HostSample(**out)
        dt = max(cur["t"] - prev["t"], 1e-6)
        if isinstance(cur["stat"], str) and isinstance(prev["stat"], str):
            a, b = parse_proc_stat(prev["stat"]), parse_proc_stat(cur["stat"])
            cores = sorted((k for k in b if k != "cpu" and k in a), key=lambda k: int(k[3:]))
            out["cpu_busy_pct"] = [round(cpu_busy_pct(a[k], b[k])[0], 1) for k in cores]
            if "cpu" in a and "cpu" in b:
                out["iowait_pct"] = round(cpu_busy_pct(a["cpu"], b["cpu"])[1], 1)
        if isinstance(cur["vmstat"], str) and isinstance(prev["vmstat"], str):
            keys = ("pgmajfault", "pswpin")
            va, vb = keyed_values(prev["vmstat"], keys), keyed_values(cur["vmstat"], keys)
            out["major_faults_per_s"] = round((vb.get("pgmajfault", 0) - va.get("pgmajfault", 0)) / dt, 1)
            out["swap_in_pages_per_s"] = round((vb.get("pswpin", 0) - va.get("pswpin", 0)) / dt, 1)
        if isinstance(cur["disk"], str) and isinstance(prev["disk"], str):
            (r0, w0), (r1, w1) = parse_diskstats(prev["disk"]), parse_diskstats(cur["disk"])
            out["disk_read_bytes_per_s"], out["disk_write_bytes_per_s"] = round((r1 - r0) / dt), round((w1 - w0) / dt)
        if isinstance(cur["net"], str) and isinstance(prev["net"], str):
            na, nb = parse_net_dev(prev["net"]), parse_net_dev(cur["net"])
            rx = sum(nb[k]["rx_bytes"] - na[k]["rx_bytes"] for k in nb if k in na and k != "lo")
            tx = sum(nb[k]["tx_bytes"] - na[k]["tx_bytes"] for k in nb if k in na and k != "lo")
            out["net_rx_bytes_per_s"], out["net_tx_bytes_per_s"] = round(rx / dt), round(tx / dt)
        return HostSample(**out)


class ProcessTreeReader:
    """A process and its children, every `every` ticks: CPU, busiest thread, RSS, I/O rates and VRAM;
    the tree itself re-scanned every `refresh_every` ticks (finding children walks every process)."""

    def __init__(
        self,
        pid: int,
        nvml: NvmlBackend,
        gpus: list[int],
        every: int = 5,
        refresh_every: int = 25,
        exclude: frozenset[int] = frozenset(),
        cores: Callable[[list[int]], float | None] | None = None,
    ) -> None:
        self.tree = ProcessTree(pid, exclude)
        self.cores_of, self._workers = cores, 0
        self._cores: float | None = None  # the cores it may use, read at each re-scan
        self.nvml, self.gpus = nvml, gpus
        self.every, self.refresh_every = every, refresh_every
        self._prev: dict[int, ProcessDetail] = {}
        self._prev_t = time.monotonic()
        self._tick = 0
        self._last = WorkloadSample()
        self._listed: dict[int, list[dict[str, Any]]] | None = None  # GPU processes listed by this tick's read
        self._util_since: dict[int, int] = {}  # per GPU: the newest per-process utilization sample read

    def read(self) -> WorkloadSample | None:
        """None once the workload is gone."""
        self._listed = None
        rescan = self._tick % self.refresh_every == 0 or self._workers < 0  # a DataLoader's worker ended: a new epoch's
        if rescan and not self.tree.refresh():
            return None
        if rescan and self.cores_of is not None:
            root = self.tree.root.pid  # its cgroup first; the affinity of all its processes
            self._cores = self.cores_of([root, *sorted(self.tree.pids - {root})])
        if self._tick % self.every == 0:
            self._last = self._read()
        self._tick += 1
        return self._last

    def _read(self) -> WorkloadSample:
        now = time.monotonic()
        seen = self.tree.details()
        first = not self._prev
        prev, dt = self._prev, max(now - self._prev_t, 1e-6)
        r = rates(prev, seen, dt)
        self._prev, self._prev_t = seen, now
        fields: dict[str, Any] = {"pids": len(seen), "rss_bytes": sum(d.rss_bytes for d in seen.values())}
        fields.update(loader_fields(prev, seen, dt), cores_usable=self._cores)
        now_workers = len(workers(seen))
        self._workers = -1 if now_workers < len(workers(prev)) else now_workers  # fewer: re-scan at the next read
        if not first:
            fields.update(
                cpu_pct=round(r.cpu_pct, 1),
                top_thread_pct=round(r.top_thread_pct, 1),
                read_bytes_per_s=round(r.read_bytes_per_s),
                write_bytes_per_s=round(r.write_bytes_per_s),
                rchar_bytes_per_s=round(r.rchar_bytes_per_s),
            )
        listed = self._listed = compute_processes(self.nvml, self.gpus)
        if listed:
            fields["vram_bytes"] = sum(
                p["used_bytes"] or 0 for procs in listed.values() for p in procs if p["pid"] in seen
            )
            on_gpu = {p["pid"] for procs in listed.values() for p in procs} & seen.keys() & prev.keys()
            if on_gpu and not first:  # the CPU of the processes that drive the GPUs, apart from their helpers
                g = rates({k: prev[k] for k in on_gpu}, {k: seen[k] for k in on_gpu}, dt)
                fields["gpu_process_cpu_pct"] = round(g.cpu_pct, 1)
                fields["gpu_main_thread_pct"] = round(g.main_thread_pct, 1)
        return WorkloadSample(**fields)

    def gpu_processes(self) -> tuple[list[GpuProcess], list[GpuProcess]]:
        """(other jobs' processes on the GPUs, for `contended`; the tree's own processes on them), each
        with its SM utilization where NVML gives it; right after a `read` that listed them for the
        tree's VRAM, that listing."""
        listed = self._listed if self._listed is not None else compute_processes(self.nvml, self.gpus)
        if not {p["pid"] for procs in listed.values() for p in procs} <= self.tree.pids:
            self.tree.refresh()  # a child started since the last scan is the workload, not another job
        mine = self.tree.pids
        others: list[GpuProcess] = []
        own: list[GpuProcess] = []
        for i, procs in listed.items():
            util = self._sm_util(i) if procs else {}
            for p in procs:
                gp = GpuProcess(
                    gpu=i,
                    pid=p["pid"],
                    used_bytes=p["used_bytes"],
                    sm_util_pct=util.get(p["pid"], 0.0) if util is not None else None,
                )
                (own if p["pid"] in mine else others).append(gp)
        return others, own

    def _sm_util(self, gpu: int) -> dict[int, float] | None:
        """Each process's SM utilization on a GPU since the last reading."""
        got = process_sm_util(self.nvml, gpu, self._util_since.get(gpu, 0))
        if got is None:
            return None
        util, self._util_since[gpu] = got
        return util


def _allocator_fields(alloc: dict[str, float]) -> dict[str, float | None]:
    """The allocator's counters as the workload sample's fields (an out-of-memory size only once one failed)."""
    failed = alloc["oom_requested_bytes"] > 0
    return {
        "alloc_retries_total": alloc["retries"],
        "cuda_mallocs_total": alloc["cuda_mallocs"],
        "cuda_frees_total": alloc["cuda_frees"],
        "ooms_total": alloc["ooms"],
        "allocator_reserved_bytes": alloc["reserved_bytes"],
        "allocator_allocated_bytes": alloc["allocated_bytes"],
        "oom_requested_bytes": alloc["oom_requested_bytes"] if failed else None,
        "oom_free_bytes": alloc["oom_free_bytes"] if failed else None,
    }


class Sampler:
    """Samples every `cadences.gpu_s` on a daemon thread; each sample goes to `sinks`, batches of them
    (about once a second) to `batch_sinks`."""

    def __init__(
        self,
        nvml: NvmlBackend,
        host: Host,
        gpus: list[int],
        *,
        cadences: Cadences = Cadences(),
        pid: int | None = None,
        sinks: tuple[Callable[[Sample], None], ...] = (),
        batch_sinks: tuple[Callable[[list[Sample]], None], ...] = (),
        use_gpm: bool = True,
    ) -> None:
        nvml.records = {}
        if hasattr(nvml, "record"):
            nvml.record = False
        self.nvml, self.cadences = nvml, cadences
        self.sinks, self.batch_sinks = list(sinks), list(batch_sinks)
        c = cadences
        self.gpus = [GpuReader(nvml, i, use_gpm, slow_every=c.every(c.gpu_slow_s)) for i in gpus]
        self.host = HostReader(host, every=c.every(c.host_s))
        self.tree: ProcessTreeReader | None = None
        self.progress: ProgressReader | None = None  # what the workload reports through gputriage.step()
        self.ranks = RankReader()  # the ranks of a distributed job among the workload's processes
        self._ranks_every = c.every(c.workload_s)
        self._ranks_tick = 0
        self.holders: Holders | None = None  # with no workload (a watch): every process on the GPUs, as its own
        self.pid = pid
        self.recent: collections.deque[Sample] = collections.deque(maxlen=max(1, c.every(c.ring_s)))
        self.count = 0
        self.neighbours: list[GpuProcess] = []
        self.job_processes: list[GpuProcess] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="gputriage-sampler", daemon=True)
        self.busy_s = 0.0  # CPU time of the sampling thread itself
        self.cost_s = {"gpu": 0.0, "host": 0.0, "tree": 0.0, "neighbours": 0.0, "sinks": 0.0}  # busy_s by part

    def attach(self, pid: int) -> None:
        c = self.cadences
        try:
            self.tree = ProcessTreeReader(
                pid,
                self.nvml,
                [g.index for g in self.gpus],
                every=c.every(c.workload_s),
                refresh_every=c.every(c.tree_s),
                exclude=frozenset({os.getpid()} - {pid}),
                cores=functools.partial(usable_cores, self.host.host),
            )
        except Exception:  # process already gone
            self.tree = None

    def start(self) -> None:
        if self.pid is not None:
            self.attach(self.pid)
        self._thread.start()

    def sample_once(self) -> Sample:
        cost, clock = self.cost_s, time.thread_time
        c0 = clock()
        t = time.time()
        gpus = [g.read() for g in self.gpus]
        c1 = clock()
        host = self.host.read()
        c2 = clock()
        workload = self.tree.read() if self.tree is not None else None
        if workload is not None and self.progress is not None:
            done, alloc, stacks = self.progress.read_all()
            if done is not None or alloc is not None or stacks is not None:  # a copy: the tree's reading is shared
                steps = {"steps_total": done[0], "samples_total": done[1], "tokens_total": done[2]} if done else {}
                workload = msgspec.structs.replace(
                    workload,
                    **steps,
                    **(_allocator_fields(alloc) if alloc else {}),
                    **({"stacks": stacks} if stacks is not None else {}),
                )
        ranks = self._read_ranks() if workload is not None else []
        c3 = clock()
        cost["gpu"] += c1 - c0
        cost["host"] += c2 - c1
        cost["tree"] += c3 - c2
        return Sample(t_s=t, gpus=gpus, host=host, workload=workload, ranks=ranks)

    def _read_ranks(self) -> list[RankSample]:
        """The ranks' readings, at the workload's cadence (from the reports `progress` read this tick)."""
        self._ranks_tick += 1
        if self.progress is None or (self._ranks_tick - 1) % self._ranks_every:
            return []
        reports = self.progress.rank_reports()
        return self.ranks.read(reports) if reports else []

    def _loop(self) -> None:
        pending: list[Sample] = []
        last_flush = time.monotonic()
        next_t = time.monotonic()
        neighbours_every = self.cadences.every(self.cadences.neighbours_s)
        tick = 0
        while not self._stop.is_set():
            c0 = time.thread_time()
            s = self.sample_once()
            fresh = self.progress.fresh_ooms() if self.progress is not None and self.tree is not None else []
            if fresh and self.progress is not None and self.tree is not None:  # out of memory: who holds the GPU now
                self.neighbours, self.job_processes = self.tree.gpu_processes()
                for mark in fresh:
                    self.progress.ooms.record_processes(mark, time.time(), self.neighbours, self.job_processes)
            elif self.tree is not None and tick % neighbours_every == 0:
                c1 = time.thread_time()
                self.neighbours, self.job_processes = self.tree.gpu_processes()
                self.cost_s["neighbours"] += time.thread_time() - c1
            elif self.holders is not None and tick % neighbours_every == 0:
                c1 = time.thread_time()
                self.job_processes = self.holders.read()
                self.cost_s["neighbours"] += time.thread_time() - c1
            s.neighbours = self.neighbours  # every sample carries the last lists, as for other slow values
            s.job_processes = self.job_processes
            tick += 1
            c1 = time.thread_time()
            self._emit(s, pending)
            if self.batch_sinks and time.monotonic() - last_flush >= self.cadences.batch_s:
                self._flush(pending)
                pending, last_flush = [], time.monotonic()
            self.cost_s["sinks"] += time.thread_time() - c1
            self.busy_s += time.thread_time() - c0
            next_t += self.cadences.gpu_s
            delay = next_t - time.monotonic()
            if delay < 0:  # fell behind: skip ahead rather than burst
                next_t = time.monotonic()
                delay = 0
            self._stop.wait(delay)
        if pending:
            self._flush(pending)

    def _emit(self, s: Sample, pending: list[Sample]) -> None:
        self.count += 1
        self.recent.append(s)
        pending.append(s)
        for sink in self.sinks:
            sink(s)

    def _flush(self, batch: list[Sample]) -> None:
        for sink in self.batch_sinks:
            sink(batch)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        if not self._thread.is_alive():  # a thread stuck in a driver call keeps its buffers and files
            for g in self.gpus:
                g.close()
            self.host.host.close()
