"""The exporter's server. A scrape never calls NVML: the sampler's thread reads the GPUs, a judge thread
labels each GPU's last second (`sampling.live.LastSecond`, named by the `label` it is given: the function
`watch` uses), follows each GPU's regime (with the tracker it is given) and lists the processes on them, a check
thread runs the playbook it is given; the scrape renders what they left (`state()`), with the renderer it is given,
in dcgm-exporter's text format (`exposition`). `/stacks` dumps the Python stacks of the processes on the GPUs with
py-spy when asked, never on a scrape (one dump for the requests that arrive while it runs); `/regimes` serves each
GPU's regime and the last changes; `/hangs`, the hangs of a distributed job's ranks said so far (a thread dumps the
processes on the GPUs that are ranks every `hang_every_s`, where a hang watch is given)."""

from __future__ import annotations

import collections
import os
import socket
import threading
import time
from typing import Any, Callable, Iterable, Mapping, Protocol

import msgspec

from gputriage.backends import pyspy
from gputriage.backends.host import Host
from gputriage.backends.nvml import NvmlBackend, PynvmlBackend
from gputriage.exporter.checked import Checked, checked
from gputriage.exporter.exposition import Family, application
from gputriage.exporter.holders import HolderTracker, Judge
from gputriage.exporter.http import routed, serve
from gputriage.exporter.stacks import SharedRound, availability, dump_stacks
from gputriage.model.check import CheckReport
from gputriage.model.exporter import ExporterState
from gputriage.model.live_regime import LiveRegime, RegimeChange, RegimesNow
from gputriage.model.pyspy import PySpyStacks
from gputriage.model.reading import Unavailable
from gputriage.model.run import GpuStatic
from gputriage.model.sample import HangEvent
from gputriage.model.window import WindowMetrics
from gputriage.sampling.live import LastSecond
from gputriage.sampling.sampler import Cadences, Sampler
from gputriage.sampling.session import gpu_static

DEFAULT_PORT = 9400  # dcgm-exporter's
JUDGE_EVERY_S = 1.0
HANG_EVERY_S = 10.0  # the ranks on the GPUs dumped this often for a hang (each dump pauses a rank milliseconds)
HANGS_KEPT = 10  # the last hangs the state keeps
CHANGES_KEPT = 10  # the changes of regime the state keeps (gputriage_regime_changes_total counts them all)

# each GPU's last second -> each GPU's bottleneck (diagnosis.run.live.live_labels)
Label = Callable[[Mapping[int, WindowMetrics], Mapping[int, GpuStatic]], Mapping[int, str]]
# the exporter's state -> its metric families, as a scrape serves them (report.prometheus.families)
Render = Callable[[ExporterState], Iterable[Family]]
# the playbook on this machine (None: it could not run this time)
Check = Callable[[], "CheckReport | None"]


class Regimes(Protocol):
    """Each GPU's regime from its labelled seconds (diagnosis.run.live_regimes.LiveRegimes)."""

    def update(self, t_s: float, labels: Mapping[int, str]) -> list[RegimeChange]: ...
    def current(self) -> dict[int, LiveRegime]: ...
    def counts(self) -> dict[int, int]: ...


class Hangs(Protocol):
    """A hang of a distributed job's ranks, from py-spy's dumps of them (api.live_hangs.LiveHangs)."""

    kept: list[HangEvent]

    def is_rank(self, pid: int) -> bool: ...
    def on_dump(self, pid: int, t_s: float, threads: list[Any]) -> None: ...


class ExporterError(Exception):
    """The exporter cannot serve: the address taken or not ours."""


class Exporter:
    """Start it, scrape `url`, stop it. `nvml`/`host`: backends to read (default: this machine's)."""

    def __init__(
        self,
        *,
        label: Label,
        render: Render,
        check: Check | None = None,
        listen: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        period_s: float = 0.5,
        window_s: float = 60.0,
        check_every_s: float = 60.0,
        nvml: NvmlBackend | None = None,
        host: Host | None = None,
        held: Judge | None = None,
        regimes: Callable[[], Regimes] | None = None,
        price_per_gpu_hour: float | None = None,
        currency: str = "USD",
        hangs: Callable[[], Hangs] | None = None,
        hang_every_s: float = HANG_EVERY_S,
    ) -> None:
        """`held`: judges which processes hold a GPU idle (diagnosis.idle_held.judge_live); `regimes`: makes the
        tracker of each GPU's regime (None: no regime followed); `price_per_gpu_hour`: served as
        gputriage_price_per_gpu_hour, for the dashboards' cost panels; `hangs`: makes what says a hang of a distributed
        job's ranks from py-spy's dumps of them, every `hang_every_s` (None: no hang watched)."""
        self.listen, self.port, self.period_s = listen, port, period_s
        self.window_s, self.check_every_s = window_s, check_every_s
        self._label, self._render, self._run_check = label, render, check
        self._nvml, self._host = nvml, host
        self._held, self.price_per_gpu_hour, self.currency = held, price_per_gpu_hour, currency
        self.tracker: HolderTracker | None = None
        self.regimes = regimes() if regimes is not None else None
        self.hangs = hangs() if hangs is not None else None
        self.hang_every_s = hang_every_s
        self.dump_one: Callable[[int], Any] = pyspy.dump  # one process's threads, or why not
        self.changes: collections.deque[RegimeChange] = collections.deque(maxlen=CHANGES_KEPT)
        self.pyspy: Unavailable | None = None  # why py-spy cannot read the processes on the GPUs (checked at start)
        self._pyspy_checked = False
        self._lock = threading.Lock()  # the regimes: updated by the judge, read by a scrape
        self.stacks_round = SharedRound(self._dump)  # one py-spy round at a time, shared by who asks meanwhile
        self._stop = threading.Event()
        self._labels: dict[int, collections.deque[tuple[float, str]]] = {}
        self._checked = Checked()
        self._threads: list[threading.Thread] = []
        self._server: Any = None
        self.sampler: Sampler | None = None
        self.live: LastSecond | None = None
        self.static: dict[int, GpuStatic] = {}
        self.gpus: list[int] = []
        self.system: dict[str, Any] = {}

    @property
    def url(self) -> str:
        host = f"[{self.listen}]" if ":" in self.listen else self.listen
        return f"http://{host}:{self.port}/metrics"

    def open(self) -> Exporter:
        """The GPUs' static facts read, the sampler made (not started): what `start` serves. Alone, for a
        replay: fill `sampler.recent` and call `judge_once`."""
        nvml = self._nvml or PynvmlBackend(record=False, bounded=False)
        self.gpus, self.static, self.system = gpu_static(nvml)
        self._nvml = nvml
        self._host = host = self._host or Host()
        self.tracker = HolderTracker(nvml, host, self.gpus, self.static, self._held)
        self.sampler = Sampler(
            nvml,
            host,
            self.gpus,
            cadences=Cadences(gpu_s=self.period_s, ring_s=max(10.0, 3 * self.period_s)),
        )
        self.live = LastSecond(nvml, self.gpus)
        self._labels = {i: collections.deque(maxlen=int(self.window_s) + 1) for i in self.gpus}
        return self

    @property
    def stacks_url(self) -> str:
        return self.url.rsplit("/", 1)[0] + "/stacks"

    def serve(self) -> Exporter:
        """Serve at `url` (and `/stacks`) what the exporter holds, without sampling (`start` samples too; alone, a
        replay: what `judge_once` left). Whether py-spy can read the processes on the GPUs is checked first, once."""
        if self.sampler is None:
            self.open()
        if not self._pyspy_checked:
            self.pyspy, self._pyspy_checked = availability(), True
        metrics = application(lambda: self._render(self.state()))
        try:
            routes = {"/stacks": self.stacks_json, "/regimes": self.regimes_json, "/hangs": self.hangs_json}
            self._server = serve(self.listen, self.port, routed(metrics, routes))
        except OSError as exc:
            raise ExporterError(f"cannot listen on {self.listen}:{self.port}: {exc.strerror or exc}") from None
        self.port = self._server.server_address[1]  # port 0: the one the system chose
        return self

    def start(self) -> Exporter:
        self.serve()
        assert self.sampler is not None
        self.sampler.start()
        loops = [(self._judge, "gputriage-exporter-judge"), (self._check, "gputriage-exporter-check")]
        if self.hangs is not None:
            loops.append((self._hang_loop, "gputriage-exporter-hangs"))
        for target, name in loops:
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

    def judge_once(self) -> dict[int, str]:
        """Each GPU's label over the last second of the sampler's samples (kept for the shares)."""
        if self.sampler is None or self.live is None:
            return {}
        recent = list(self.sampler.recent)
        if not recent:
            return {}
        labels = {
            i: str(getattr(b, "value", b)) for i, b in self._label(self.live.metrics(recent), self.static).items()
        }
        for i, b in labels.items():
            if i in self._labels:
                self._labels[i].append((recent[-1].t_s, b))
        if self.regimes is not None:
            with self._lock:
                self.changes.extend(self.regimes.update(recent[-1].t_s, labels))
        if self.tracker is not None:  # who holds the GPUs, read again every few seconds of the samples' time
            self.tracker.update(recent[-1].t_s)
        return labels

    def stacks(self) -> PySpyStacks:
        """One py-spy dump of each process on the GPUs now (as last listed: no NVML call), classified as `watch`
        classifies its dumps; or why there is none. A request that arrives while a round runs gets that round's
        answer: each round pauses the processes, and two taken back to back would say the same."""
        return self.stacks_round()

    def _dump(self) -> PySpyStacks:
        pids = sorted({p.pid for p in (self.live.processes if self.live is not None else [])} - {os.getpid()})
        return dump_stacks(pids)

    def stacks_json(self) -> bytes:
        return msgspec.json.encode(self.stacks())

    def regimes_now(self) -> RegimesNow:
        """Each GPU's regime, the last changes and how many each GPU made: what `/regimes` serves, and the scrape."""
        if self.regimes is None:
            return RegimesNow()
        with self._lock:
            current, counts, changes = self.regimes.current(), self.regimes.counts(), list(self.changes)
        return RegimesNow(
            regimes=[current[i] for i in sorted(current)],
            changes=changes,
            changes_total={i: counts.get(i, 0) for i in self.gpus},
        )

    def regimes_json(self) -> bytes:
        return msgspec.json.encode(self.regimes_now())

    def hang_once(self) -> None:
        """One py-spy dump of each process on the GPUs that is a rank of a distributed job (none: no dump), read for a
        hang (said once, on stderr, and kept for the scrapes)."""
        if self.hangs is None or self.live is None or (self._pyspy_checked and self.pyspy is not None):
            return
        for pid in sorted({p.pid for p in self.live.processes} - {os.getpid()}):
            if self.hangs.is_rank(pid):
                got = self.dump_one(pid)
                if isinstance(got, list):
                    self.hangs.on_dump(pid, time.time(), got)

    def hangs_json(self) -> bytes:
        return msgspec.json.encode(self.hangs.kept if self.hangs is not None else [])

    def _hang_loop(self) -> None:
        while not self._stop.wait(self.hang_every_s):
            self.hang_once()

    def _judge(self) -> None:
        while not self._stop.wait(JUDGE_EVERY_S):
            self.judge_once()

    def _check(self) -> None:
        """The playbook every `check_every_s` (0: never): its findings, each GPU's last Xid and PCIe replays."""
        while self._run_check is not None and self.check_every_s > 0 and not self._stop.is_set():
            self.check_once()
            if self._stop.wait(self.check_every_s):
                return

    def check_once(self, now_s: float | None = None) -> None:
        """The playbook once, kept for the scrapes (`now_s`: when it ran, default now); its last outcome stays where
        it could not run this time."""
        report = self._run_check() if self._run_check is not None else None
        if report is not None:
            self._checked = checked(report, self.gpus, time.time() if now_s is None else now_s)

    def shares(self, now_s: float) -> dict[int, dict[str, float]]:
        """Each GPU's bottlenecks over the last `window_s`: the share of the labelled seconds each took."""
        out: dict[int, dict[str, float]] = {}
        for i, labels in self._labels.items():
            kept = [b for t, b in list(labels) if t >= now_s - self.window_s]
            out[i] = {b: round(n / len(kept), 3) for b, n in collections.Counter(kept).items()} if kept else {}
        return out

    def state(self) -> ExporterState:
        """What a scrape renders: no NVML call, only what the threads left."""
        recent = self.sampler.recent if self.sampler is not None else []
        c = self._checked
        now = self.regimes_now()
        return ExporterState(
            hostname=socket.gethostname(),
            driver=self.system.get("driver"),
            gpus=self.static,
            pci_bus_ids=c.pci_bus_ids,
            sample=recent[-1] if recent else None,
            bottlenecks=self.shares(time.time()),
            window_s=self.window_s,
            processes=list(self.live.processes) if self.live is not None else [],
            findings=list(c.findings),
            checked_s=c.checked_s,
            xid_last=c.xid_last,
            pcie_replays=c.pcie_replays,
            holders=list(self.tracker.held) if self.tracker is not None else [],
            price_per_gpu_hour=self.price_per_gpu_hour,
            currency=self.currency,
            regimes={r.gpu: r for r in now.regimes},
            regime_changes=now.changes,
            regime_changes_total=now.changes_total,
            pyspy_available=self.pyspy is None if self._pyspy_checked else None,
            pyspy_reason=self.pyspy.reason if self.pyspy is not None else "",
            hangs=list(self.hangs.kept[-HANGS_KEPT:]) if self.hangs is not None else [],
        )
