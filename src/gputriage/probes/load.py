"""The load itself: steps of a concurrency sweep (N requests in flight, each sent as the last one ends) or
of request-rate runs (Poisson arrivals, gamma-distributed gaps for burstiness), each bounded in requests
and seconds, after warm-up requests that are not counted. Everything the client does runs on one event
loop thread, whose CPU time is the generator's own cost; the server is watched from another thread."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from gputriage.backends import openai_stream as http
from gputriage.backends.openai_stream import RequestRecord

Prompt = tuple[str, int, bool]  # text, max tokens, a long prompt of a mix


@dataclass
class StepRecord:
    concurrency: Optional[int]
    rate_per_s: Optional[float]
    t0_s: float  # perf_counter seconds
    t1_s: float
    records: list[RequestRecord]
    client_cpu_s: float  # the event loop thread's CPU time over the step
    control: bool = False


@dataclass
class LoadPlan:
    url: str  # the endpoint's full URL
    model: str
    endpoint: str
    prompts: Callable[[], Prompt]
    concurrencies: list[int] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)
    burstiness: float = 1.0
    requests_per_step: int = 64
    seconds_per_step: float = 60.0
    warmup: int = 2
    timeout_s: float = 120.0
    ignore_eos: bool = False
    seed: int = 0
    control: Optional[Callable[[], Prompt]] = None  # each step again with these prompts (the mix's control)
    keep_text: bool = False  # keep each request's prompt and streamed text (to count their tokens)


def _payload(plan: LoadPlan, p: Prompt) -> dict[str, Any]:
    return http.body(plan.endpoint, plan.model, p[0], p[1], plan.ignore_eos)


async def _one(sess: Any, plan: LoadPlan, p: Prompt) -> RequestRecord:
    rec = await http.stream(sess, plan.url, _payload(plan, p), plan.timeout_s, p[2], plan.keep_text)
    if plan.keep_text:
        rec.prompt = p[0]
    return rec


async def _concurrency(sess: Any, plan: LoadPlan, c: int, prompts: Callable[[], Prompt]) -> list[RequestRecord]:
    deadline = time.perf_counter() + plan.seconds_per_step
    issued = 0
    out: list[RequestRecord] = []

    async def worker() -> None:
        nonlocal issued
        while issued < plan.requests_per_step and time.perf_counter() < deadline:
            issued += 1
            out.append(await _one(sess, plan, prompts()))

    await asyncio.gather(*(worker() for _ in range(c)))
    return out


async def _rate(sess: Any, plan: LoadPlan, rate: float, rng: random.Random, prompts: Callable[[], Prompt]
                ) -> list[RequestRecord]:
    start = t = time.perf_counter()
    deadline = start + plan.seconds_per_step
    tasks = []
    shape = max(plan.burstiness, 1e-3)
    for _ in range(plan.requests_per_step):
        t += rng.gammavariate(shape, 1.0 / (rate * shape))  # mean 1/rate; shape < 1 is burstier than Poisson
        if t > deadline:
            break
        await asyncio.sleep(max(0.0, t - time.perf_counter()))
        tasks.append(asyncio.create_task(_one(sess, plan, prompts())))
    return list(await asyncio.gather(*tasks))


async def _drive(plan: LoadPlan, on_step: Callable[[str], None], calibrate: Callable[[list[RequestRecord]], None]
                 ) -> list[StepRecord]:
    rng = random.Random(plan.seed)
    most = max(plan.concurrencies or [1]) if not plan.rates else plan.requests_per_step
    async with http.session(most) as sess:
        if plan.warmup:
            on_step(f"warm-up: {plan.warmup} requests")
            warm = [await _one(sess, plan, plan.prompts()) for _ in range(plan.warmup)]
            calibrate(warm)
        steps: list[StepRecord] = []
        runs: list[tuple[Optional[int], Optional[float], Callable[[], Prompt]]]
        runs = [(c, None, p) for c in plan.concurrencies for p in (plan.prompts, plan.control) if p is not None]
        runs += [(None, r, p) for r in plan.rates for p in (plan.prompts, plan.control) if p is not None]
        for c, rate, prompts in runs:
            control = prompts is plan.control
            on_step((f"concurrency {c}" if c is not None else f"{rate:g} requests/s") + (" (control)" * control))
            cpu0, t0 = time.thread_time(), time.perf_counter()
            records = await (_concurrency(sess, plan, c, prompts) if c is not None
                             else _rate(sess, plan, rate or 0.0, rng, prompts))
            steps.append(StepRecord(c, rate, t0, time.perf_counter(), records, time.thread_time() - cpu0, control))
        return steps


def drive(plan: LoadPlan, on_step: Callable[[str], None] = lambda _s: None,
          calibrate: Callable[[list[RequestRecord]], None] = lambda _r: None) -> list[StepRecord]:
    """Run the plan's steps in order; `calibrate` hears the warm-up's records (to size the prompts)."""
    return asyncio.run(_drive(plan, on_step, calibrate))


@dataclass
class ServerSample:
    t_s: float  # perf_counter seconds
    metrics: dict[str, float] = field(default_factory=dict)  # Prometheus: name -> value summed over labels
    process_cpu_s: Optional[float] = None
    threads_cpu_s: dict[int, float] = field(default_factory=dict)


class ServerWatch:
    """Scrapes the server's /metrics and reads its process's CPU time (when it runs here) about once a
    second, on a thread of its own (not the client's)."""

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
        if self.metrics_url is not None and self.metrics_error is None:
            try:
                s.metrics = parse_metrics(http.get_text(self.metrics_url))
            except (OSError, ValueError) as exc:
                self.metrics_error = f"{self.metrics_url}: {exc}"
        if self.pid is not None:
            from gputriage.backends.process_tree import details_of
            from gputriage.backends.server_process import thread_name

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
    labels (a server with several engines or models counts once)."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[sample.name] = out.get(sample.name, 0.0) + float(sample.value)
    return out
