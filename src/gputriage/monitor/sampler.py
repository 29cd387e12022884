"""A sampling thread: per GPU (NVML + GPM), per host (/proc), per workload process tree (psutil).

One sample is a plain dict (cheap to build, to batch into the store and to replay):
  {"t": unix_s,
   "gpus": [{"index", "util", "memutil", "used", "power", "sm_clk", "reasons", "temp",
             "gpm": {"2": sm_active_pct, "3", "5", "10", "20": pcie_tx_mb_s, "21": pcie_rx_mb_s}}],
   "host": {"cpu": [busy % per core], "iowait", "mem_avail", "swap_used", "majflt_s", "swapin_s",
            "disk_rd_bps", "disk_wr_bps", "net_rx_bps", "net_tx_bps"},
   "proc": {"pids", "cpu_pct", "top_thread_pct", "rss", "io_rd_bps", "io_wr_bps", "io_rchar_bps", "vram"}}
Values the hardware does not give are absent (never zero-filled). GPU counters are read every
sample; host and workload CPU twice a second; slow-moving values (memory, temperature, per-thread
CPU, disk, network) once a second; rows in between repeat the last values.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from gputriage.backends.host import Host
from gputriage.backends.process_tree import ProcessDetail, ProcessTree
from gputriage.backends.nvml import (GPM_ANY_TENSOR_UTIL, GPM_DRAM_BW_UTIL, GPM_PCIE_RX_PER_SEC, GPM_PCIE_TX_PER_SEC,
                                     GPM_SM_OCCUPANCY, GPM_SM_UTIL, NvmlBackend, compute_processes)
from gputriage.collect.procfs import cpu_busy_pct, keyed_values, parse_diskstats, parse_net_dev, parse_proc_stat
from gputriage.model.reading import Unavailable

DEFAULT_PERIOD_S = 0.1  # NVML utilization and GPM refresh at ~10 Hz on recent GPUs


def _ok(reading: Any) -> bool:
    return not isinstance(reading, Unavailable)


# the GPM metrics the verdicts use: SM activity, occupancy, tensor pipes, DRAM bandwidth, PCIe TX/RX
SAMPLED_GPM = (GPM_SM_UTIL, GPM_SM_OCCUPANCY, GPM_ANY_TENSOR_UTIL, GPM_DRAM_BW_UTIL, GPM_PCIE_TX_PER_SEC,
               GPM_PCIE_RX_PER_SEC)


class GpuReader:
    """Reads one GPU's sample row: utilization, power, SM clock, clock-event reasons and GPM (over the
    interval since the previous row) every sample; memory used and temperature, which move slowly,
    every `slow_every` samples (the row carries the last values)."""

    def __init__(self, nvml: NvmlBackend, index: int, use_gpm: bool = True, slow_every: int = 10) -> None:
        self.nvml, self.index, self.slow_every = nvml, index, slow_every
        self._gpm_prev: Any = nvml.gpm_sample(index) if use_gpm else Unavailable("not_supported", "off")
        self.gpm_ok = _ok(self._gpm_prev)
        self._gpm_spare: Any = None  # the buffer of the sample before last, refilled next time
        self._tick = 0
        self._slow: dict[str, Any] = {}

    def read(self) -> dict[str, Any]:
        n, i = self.nvml, self.index
        row: dict[str, Any] = {"index": i}
        row.update(n.gpu_counters(i))
        if self._tick % self.slow_every == 0:
            self._slow = {}
            temp = n.call("nvmlDeviceGetTemperature", i, 0)
            if _ok(temp):
                self._slow["temp"] = temp
            mem = n.call("nvmlDeviceGetMemoryInfo", i)
            if _ok(mem):
                self._slow["used"] = mem["used"]
        self._tick += 1
        row.update(self._slow)
        if self.gpm_ok:
            cur = n.gpm_sample(i, into=self._gpm_spare)
            if _ok(cur):
                m = n.gpm_metrics(i, self._gpm_prev, cur, SAMPLED_GPM)
                self._gpm_spare, self._gpm_prev = self._gpm_prev, cur
                if _ok(m):
                    row["gpm"] = {k: round(v, 2) for k, v in m["metrics"].items()}
        return row

    def close(self) -> None:
        if self.gpm_ok:
            self.nvml.gpm_free(self._gpm_prev)
            if self._gpm_spare is not None:
                self.nvml.gpm_free(self._gpm_spare)


class HostReader:
    """Per-core CPU and iowait every `cpu_every` samples (2 Hz at 10 Hz: the verdicts judge 1 s
    windows); memory, swap, faults, disk and network rates every `slow_every` samples. Rows in
    between carry the last values."""

    def __init__(self, host: Host, slow_every: int = 10, cpu_every: int = 5) -> None:
        self.host = host
        self.slow_every, self.cpu_every = slow_every, cpu_every
        self._last_cpu: dict[str, Any] = {}
        self._prev: dict[str, Any] | None = None
        self._prev_slow: dict[str, Any] | None = None
        self._tick = 0
        self._last_slow: dict[str, Any] = {}

    def _raw(self, paths: tuple[tuple[str, str], ...]) -> dict[str, Any]:
        h = self.host
        raw: dict[str, Any] = {"t": time.monotonic()}
        for key, path in paths:
            raw[key] = h.reread(path)
        h.records.clear()  # the sampler must not grow the recording
        return raw

    def read(self) -> dict[str, Any]:
        if self._tick % self.cpu_every == 0:
            self._last_cpu = self._read_cpu()
        out: dict[str, Any] = dict(self._last_cpu)
        if self._tick % self.slow_every == 0:
            self._last_slow = self._read_slow()
        self._tick += 1
        out.update(self._last_slow)
        return out

    def _read_cpu(self) -> dict[str, Any]:
        cur = self._raw((("stat", "/proc/stat"),))
        prev, self._prev = self._prev, cur
        out: dict[str, Any] = {}
        if prev is not None and isinstance(cur["stat"], str) and isinstance(prev["stat"], str):
            a, b = parse_proc_stat(prev["stat"]), parse_proc_stat(cur["stat"])
            cores = sorted((k for k in b if k != "cpu" and k in a), key=lambda k: int(k[3:]))
            out["cpu"] = [round(cpu_busy_pct(a[k], b[k])[0], 1) for k in cores]
            if "cpu" in a and "cpu" in b:
                out["iowait"] = round(cpu_busy_pct(a["cpu"], b["cpu"])[1], 1)
        return out

    def _read_slow(self) -> dict[str, Any]:
        cur = self._raw((("vmstat", "/proc/vmstat"), ("meminfo", "/proc/meminfo"), ("disk", "/proc/diskstats"),
                         ("net", "/proc/net/dev")))
        prev, self._prev_slow = self._prev_slow, cur
        out: dict[str, Any] = {}
        if isinstance(cur["meminfo"], str):
            kb = keyed_values(cur["meminfo"], ("MemAvailable", "SwapTotal", "SwapFree"))
            out["mem_avail"] = kb.get("MemAvailable", 0) * 1024
            out["swap_used"] = (kb.get("SwapTotal", 0) - kb.get("SwapFree", 0)) * 1024
        if prev is None:
            return out
        dt = max(cur["t"] - prev["t"], 1e-6)
        if isinstance(cur["vmstat"], str) and isinstance(prev["vmstat"], str):
            keys = ("pgmajfault", "pswpin")
            a, b = keyed_values(prev["vmstat"], keys), keyed_values(cur["vmstat"], keys)
            out["majflt_s"] = round((b.get("pgmajfault", 0) - a.get("pgmajfault", 0)) / dt, 1)
            out["swapin_s"] = round((b.get("pswpin", 0) - a.get("pswpin", 0)) / dt, 1)
        if isinstance(cur["disk"], str) and isinstance(prev["disk"], str):
            (r0, w0), (r1, w1) = parse_diskstats(prev["disk"]), parse_diskstats(cur["disk"])
            out["disk_rd_bps"], out["disk_wr_bps"] = round((r1 - r0) / dt), round((w1 - w0) / dt)
        if isinstance(cur["net"], str) and isinstance(prev["net"], str):
            a, b = parse_net_dev(prev["net"]), parse_net_dev(cur["net"])
            rx = sum(b[k]["rx_bytes"] - a[k]["rx_bytes"] for k in b if k in a and k != "lo")
            tx = sum(b[k]["tx_bytes"] - a[k]["tx_bytes"] for k in b if k in a and k != "lo")
            out["net_rx_bps"], out["net_tx_bps"] = round(rx / dt), round(tx / dt)
        return out


class ProcessTreeReader:
    """CPU of a process and its children every `cpu_every` samples; their busiest thread, RSS, I/O
    rate and VRAM every `slow_every` samples (per-thread counters cost one file read per thread)."""

    def __init__(self, pid: int, nvml: NvmlBackend, gpus: list[int], slow_every: int = 10, cpu_every: int = 5,
                 refresh_every: int = 50) -> None:
        self.tree = ProcessTree(pid)
        self.nvml, self.gpus = nvml, gpus
        self.slow_every, self.cpu_every = slow_every, cpu_every
        self.refresh_every = refresh_every  # finding children scans every process of the host: every 5 s
        self._cpu: dict[str, Any] = {}
        self._cpu_prev: dict[int, float] = {}
        self._cpu_t = time.monotonic()
        self._slow_prev: dict[int, ProcessDetail] = {}
        self._slow_t = time.monotonic()
        self._tick = 0
        self._slow: dict[str, Any] = {}
        self._listed: dict[int, list[dict[str, Any]]] | None = None  # GPU processes listed by this tick's read

    def read(self) -> dict[str, Any]:
        self._listed = None
        if self._tick % self.refresh_every == 0 and not self.tree.refresh():
            return {}
        now = time.monotonic()
        details = None
        if self._tick % self.slow_every == 0:
            details = self.tree.details()
            self._slow = self._read_slow(now, details)
        if self._tick % self.cpu_every == 0:
            dt = max(now - self._cpu_t, 1e-6)
            # on a slow tick the details carry each process's CPU seconds: no second pass over /proc
            seen = {pid: d.cpu_s for pid, d in details.items()} if details is not None else self.tree.cpu_seconds()
            cpu = sum(max(0.0, total - self._cpu_prev[pid]) for pid, total in seen.items() if pid in self._cpu_prev)
            self._cpu_prev, self._cpu_t = seen, now
            self._cpu = {"pids": len(seen), "cpu_pct": round(cpu / dt * 100, 1)}
        self._tick += 1
        return {**self._cpu, **self._slow}

    def _read_slow(self, now: float, seen: dict[int, ProcessDetail]) -> dict[str, Any]:
        dt = max(now - self._slow_t, 1e-6)
        rd = wr = rchar = top_thread = 0.0
        for pid, d in seen.items():
            prev = self._slow_prev.get(pid)
            if prev is None:
                continue
            rd += max(0, d.read_bytes - prev.read_bytes) / dt
            wr += max(0, d.write_bytes - prev.write_bytes) / dt
            rchar += max(0, d.read_chars - prev.read_chars) / dt
            for tid, secs in d.threads_cpu_s.items():
                if tid in prev.threads_cpu_s:
                    top_thread = max(top_thread, (secs - prev.threads_cpu_s[tid]) / dt * 100)
        first = not self._slow_prev
        self._slow_prev, self._slow_t = seen, now
        out: dict[str, Any] = {"rss": sum(d.rss_bytes for d in seen.values()), "io_rd_bps": round(rd),
                               "io_wr_bps": round(wr), "io_rchar_bps": round(rchar)}
        if not first:
            out["top_thread_pct"] = round(top_thread, 1)
        vram = self._read_vram(set(seen))
        if vram is not None:
            out["vram"] = vram
        return out

    def _read_vram(self, pids: set[int]) -> int | None:
        listed = self._listed = compute_processes(self.nvml, self.gpus)
        if not listed:
            return None
        return sum(p["used_bytes"] or 0 for procs in listed.values() for p in procs if p["pid"] in pids)

    def others_on_gpus(self) -> list[dict[str, Any]]:
        """Processes on the GPUs that are not this tree (for `contended`); right after a `read` that
        listed them for the tree's VRAM, that listing."""
        listed = self._listed if self._listed is not None else compute_processes(self.nvml, self.gpus)
        if not {p["pid"] for procs in listed.values() for p in procs} <= self.tree.pids:
            self.tree.refresh()  # a child started since the last scan is the workload, not another job
        mine = self.tree.pids
        return [{"gpu": i, "pid": p["pid"], "used": p["used_bytes"]} for i, procs in listed.items() for p in procs
                if p["pid"] not in mine]


class Sampler:
    """Samples every `period_s` on a daemon thread and hands batches of samples to `sink`."""

    def __init__(self, nvml: NvmlBackend, host: Host, gpus: list[int], *, period_s: float = DEFAULT_PERIOD_S,
                 pid: int | None = None, sink: Callable[[list[dict[str, Any]]], None] | None = None,
                 batch_s: float = 1.0, use_gpm: bool = True) -> None:
        nvml.records = {}  # type: ignore[misc]
        if hasattr(nvml, "record"):
            nvml.record = False  # type: ignore[attr-defined]
        self.nvml, self.period_s, self.sink, self.batch_s = nvml, period_s, sink, batch_s
        self.gpus = [GpuReader(nvml, i, use_gpm) for i in gpus]
        self.host = HostReader(host)
        self.tree: ProcessTreeReader | None = None
        self.pid = pid
        self.samples: list[dict[str, Any]] = []
        self.others: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="gputriage-sampler", daemon=True)
        self.busy_s = 0.0  # CPU time of the sampling thread itself
        self.cost_s = {"gpu": 0.0, "host": 0.0, "tree": 0.0, "others": 0.0, "sink": 0.0}  # busy_s by part

    def attach(self, pid: int) -> None:
        try:
            self.tree = ProcessTreeReader(pid, self.nvml, [g.index for g in self.gpus])
        except Exception:  # process already gone
            self.tree = None

    def start(self) -> None:
        if self.pid is not None:
            self.attach(self.pid)
        self._thread.start()

    def sample_once(self) -> dict[str, Any]:
        cost, clock = self.cost_s, time.thread_time
        c0 = clock()
        s: dict[str, Any] = {"t": time.time(), "gpus": [g.read() for g in self.gpus]}
        c1 = clock()
        s["host"] = self.host.read()
        c2 = clock()
        if self.tree is not None:
            s["proc"] = self.tree.read()
        c3 = clock()
        cost["gpu"] += c1 - c0
        cost["host"] += c2 - c1
        cost["tree"] += c3 - c2
        return s

    def _loop(self) -> None:
        pending: list[dict[str, Any]] = []
        last_flush = time.monotonic()
        next_t = time.monotonic()
        tick = 0
        while not self._stop.is_set():
            c0 = time.thread_time()
            s = self.sample_once()
            if self.tree is not None and tick % 20 == 0:  # every 2 s at 10 Hz
                c1 = time.thread_time()
                self.others = self.tree.others_on_gpus()
                self.cost_s["others"] += time.thread_time() - c1
            if self.others:
                s["others"] = self.others  # every sample carries the last list, as for other slow values
            tick += 1
            self.samples.append(s)
            pending.append(s)
            if self.sink is not None and time.monotonic() - last_flush >= self.batch_s:
                c1 = time.thread_time()
                self.sink(pending)
                pending, last_flush = [], time.monotonic()
                self.cost_s["sink"] += time.thread_time() - c1
            self.busy_s += time.thread_time() - c0
            next_t += self.period_s
            delay = next_t - time.monotonic()
            if delay < 0:  # fell behind: skip ahead rather than burst
                next_t = time.monotonic()
                delay = 0
            self._stop.wait(delay)
        if self.sink is not None and pending:
            self.sink(pending)

    def stop(self) -> list[dict[str, Any]]:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        if not self._thread.is_alive():  # a thread stuck in a driver call keeps its buffers and files
            for g in self.gpus:
                g.close()
            self.host.host.close()
        return self.samples
