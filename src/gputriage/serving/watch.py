"""What the server did while it was loaded: its Prometheus /metrics scraped, its process's CPU by thread (when
it runs here), and this machine's CPUs, about once a second on a thread of its own (not the client's)."""

from __future__ import annotations

import threading
import time
from typing import Optional

from gputriage.backends import openai_stream as http
from gputriage.backends.process_tree import details_of
from gputriage.backends.server_process import machine_cpu, thread_name
from gputriage.model.load import ServerSample


class ServerWatch:
    """Scrapes the server's /metrics and reads its process's CPU time (when it runs here) and this machine's
    CPU time, every `period_s`."""

    def __init__(self, metrics_url: Optional[str], pid: Optional[int], period_s: float = 1.0) -> None:
        self.metrics_url, self.pid, self.period_s = metrics_url, pid, period_s
        self.samples: list[ServerSample] = []
        self.thread_names: dict[int, str] = {}  # the server's threads that kept a core half busy, by id
        self.metrics_error: Optional[str] = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="gputriage-server-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _read(self) -> ServerSample:
        s = ServerSample(t_s=time.perf_counter())
        s.machine_busy_s, s.machine_cores = machine_cpu()
        if self.metrics_url is not None and self.metrics_error is None:
            try:
                s.metrics = parse_metrics(http.get_text(self.metrics_url))
            except (OSError, ValueError) as exc:
                self.metrics_error = f"{self.metrics_url}: {exc}"
        if self.pid is not None:
            d = details_of([self.pid]).get(self.pid)
            s.process_cpu_s, s.threads_cpu_s = (d.cpu_s, d.threads_cpu_s) if d else (None, {})
            last = next((x for x in reversed(self.samples) if x.threads_cpu_s), None)
            for tid, cpu in s.threads_cpu_s.items():
                busy = last is not None and cpu - last.threads_cpu_s.get(tid, 0.0) > 0.5 * (s.t_s - last.t_s)
                if busy and tid not in self.thread_names:
                    self.thread_names[tid] = thread_name(self.pid, tid)
        return s

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.samples.append(self._read())
            self._stop.wait(self.period_s)
        self.samples.append(self._read())


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text exposition (prometheus-client's parser): each sample's name and value, summed over its
    labels (a server with several engines or models counts once). Text it cannot parse is a ValueError."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                out[sample.name] = out.get(sample.name, 0.0) + float(sample.value)
    except (ValueError, TypeError, IndexError, KeyError, AttributeError) as exc:
        raise ValueError(f"not Prometheus text ({type(exc).__name__})") from None
    return out
