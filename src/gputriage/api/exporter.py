"""`exporter`: a Prometheus endpoint of the sampler's readings under dcgm-exporter's names, with each GPU's
bottleneck, the processes on it and the findings of a periodic check. A scrape never calls NVML: the
sampler's thread reads the GPUs, a judge thread labels each second and lists the processes, a check thread
runs the playbook; the scrape renders what they left."""

from __future__ import annotations

import collections
import socket
import threading
import time
from typing import Any

from gputriage.api._common import GputriageError
from gputriage.model.exporter import ExporterState
from gputriage.model.sample import GpuProcess

DEFAULT_PORT = 9400  # dcgm-exporter's


class Exporter:
    """Start it, scrape `url`, stop it. `nvml`/`host`: backends to read (default: this machine's)."""

    def __init__(self, *, listen: str = "127.0.0.1", port: int = DEFAULT_PORT, period_s: float = 0.5,
                 window_s: float = 60.0, check_every_s: float = 60.0, nvml: Any = None, host: Any = None) -> None:
        self.listen, self.port, self.period_s = listen, port, period_s
        self.window_s, self.check_every_s = window_s, check_every_s
        self._nvml, self._host = nvml, host
        self._stop = threading.Event()
        self._labels: dict[int, collections.deque[tuple[float, str]]] = {}
        self._processes: list[GpuProcess] = []
        self._checked: dict[str, Any] = {}
        self._threads: list[threading.Thread] = []
        self._server: Any = None
        self.sampler: Any = None
        self.static: dict[int, Any] = {}
        self.gpus: list[int] = []
        self.system: dict[str, Any] = {}

    @property
    def url(self) -> str:
        host = f"[{self.listen}]" if ":" in self.listen else self.listen
        return f"http://{host}:{self.port}/metrics"

    def start(self) -> Exporter:
        try:
            from prometheus_client import CollectorRegistry, start_http_server
        except ImportError:
            raise GputriageError("`gputriage exporter` needs prometheus-client: pip install 'gputriage[exporter]'") \
                from None
        from gputriage.backends.host import Host
        from gputriage.backends.nvml import PynvmlBackend
        from gputriage.report.prometheus import StateCollector
        from gputriage.sampling.sampler import Cadences, Sampler
        from gputriage.sampling.session import gpu_static

        nvml = self._nvml or PynvmlBackend(record=False, bounded=False)
        self.gpus, self.static, self.system = gpu_static(nvml)
        self._nvml = nvml
        self.sampler = Sampler(nvml, self._host or Host(), self.gpus,
                               cadences=Cadences(gpu_s=self.period_s, ring_s=max(10.0, 3 * self.period_s)))
        self._labels = {i: collections.deque(maxlen=int(self.window_s) + 1) for i in self.gpus}
        registry = CollectorRegistry(auto_describe=False)
        registry.register(StateCollector(self.state))
        try:
            self._server, _thread = start_http_server(self.port, addr=self.listen, registry=registry)
        except OSError as exc:
            raise GputriageError(f"cannot listen on {self.listen}:{self.port}: {exc.strerror or exc}") from None
        self.port = self._server.server_address[1]  # port 0: the one the system chose
        self.sampler.start()
        for target, name in ((self._judge, "gputriage-exporter-judge"), (self._check, "gputriage-exporter-check")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self.sampler is not None:
            self.sampler.stop()
        for t in self._threads:
            t.join(timeout=5)

    def _judge(self) -> None:
        """Each second, each GPU's verdict over that second, with the CPU of the processes on it (what tells a
        Python-bound server from a starved input pipeline); every 5 s, the processes on the GPUs."""
        import msgspec

        from gputriage.backends.nvml_queries import compute_processes
        from gputriage.backends.process_cpu import ProcessCpuReader
        from gputriage.diagnosis.run.classify import label
        from gputriage.model.run import GpuStatic
        from gputriage.sampling.windows import metrics_of

        readers = {i: ProcessCpuReader() for i in self.gpus}
        tick = 0
        while not self._stop.wait(1.0):
            recent = list(self.sampler.recent)
            if recent:
                last = [s for s in recent if s.t_s >= recent[-1].t_s - 1.0]
                for i in self.gpus:
                    m = metrics_of(last, i)
                    cpu = readers[i].read([p.pid for p in self._processes if p.gpu == i])
                    if cpu is not None:
                        m = msgspec.structs.replace(m, workload_cpu_pct=cpu.cpu_pct, top_thread_pct=cpu.top_thread_pct,
                                                    read_mb_per_s=cpu.read_mb_per_s, job_gpu_processes=cpu.processes)
                    verdict = label(m, self.static.get(i, GpuStatic()))[0]
                    self._labels[i].append((recent[-1].t_s, verdict.value))
            if tick % 5 == 0 and self.gpus:
                procs = compute_processes(self._nvml, self.gpus)
                self._processes = [GpuProcess(gpu=i, pid=p["pid"], used_bytes=p.get("used_bytes"))
                                   for i, ps in procs.items() for p in ps]
            tick += 1

    def _check(self) -> None:
        """The playbook every `check_every_s` (0: never): its findings, each GPU's last Xid and PCIe replays."""
        from gputriage.api.check import check

        while self.check_every_s > 0 and not self._stop.is_set():
            try:
                report = check(load=False, framework=False)
            except GputriageError:
                report = None
            if report is not None:
                facts = report.facts
                bus = {i: str(facts.get(f"gpu.{i}.pci.bus_id", "")).lower() for i in self.gpus}
                events = facts.get("kernel.xid_events")
                xids: dict[int, int] = {}
                for e in events if isinstance(events, list) else []:  # oldest first: the last one stays
                    pci = str(e.get("pci") or "") if isinstance(e, dict) else ""
                    for i, b in bus.items():
                        if pci and pci in b:
                            xids[i] = int(e.get("code", 0))
                replays = {i: int(v) for i in self.gpus
                           if isinstance(v := facts.get(f"gpu.{i}.pcie.replay_count"), int)}
                self._checked = {"findings": report.findings, "t": time.time(), "xid": xids, "replays": replays,
                                 "bus": bus}
            if self._stop.wait(self.check_every_s):
                return

    def state(self) -> ExporterState:
        """What a scrape renders: no NVML call, only what the threads left."""
        now = time.time()
        shares: dict[int, dict[str, float]] = {}
        for i, labels in self._labels.items():
            kept = [b for t, b in list(labels) if t >= now - self.window_s]
            shares[i] = {b: round(n / len(kept), 3) for b, n in collections.Counter(kept).items()} if kept else {}
        recent = self.sampler.recent if self.sampler is not None else []
        checked = self._checked
        return ExporterState(hostname=socket.gethostname(), driver=self.system.get("driver"), gpus=self.static,
                             pci_bus_ids=checked.get("bus", {}), sample=recent[-1] if recent else None,
                             bottlenecks=shares, window_s=self.window_s, processes=list(self._processes),
                             findings=list(checked.get("findings", [])), checked_s=checked.get("t"),
                             xid_last=checked.get("xid", {}), pcie_replays=checked.get("replays", {}))

