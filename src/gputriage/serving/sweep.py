"""The load itself: steps of a concurrency sweep (N requests in flight, each sent as the last one ends) or of
request-rate runs (arrivals at gamma-distributed gaps), each bounded in requests and seconds, after warm-up
requests that are not counted. Everything the client does runs on one event loop thread, whose CPU time is the
generator's own cost. SIGINT or SIGTERM stops the sweep: the steps that finished are returned, the one running
is dropped."""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import threading
import time
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, TypeVar

from gputriage.backends import openai_stream as http
from gputriage.model.load import RequestRecord, StepRecord
from gputriage.serving.arrivals import arrival_offsets_s
from gputriage.serving.prompts import Prompt

T = TypeVar("T")
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


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

    def runs(self) -> list[tuple[Optional[int], Optional[float], Callable[[], Prompt]]]:
        """The steps in order: (concurrency, rate, prompts), each followed by its control when there is one."""
        kinds = [p for p in (self.prompts, self.control) if p is not None]
        return [(c, None, p) for c in self.concurrencies for p in kinds] + [
            (None, r, p) for r in self.rates for p in kinds
        ]


class Stopper:
    """SIGINT and SIGTERM, while installed, cancel the step in flight and end the sweep (a second signal stops
    at once); `signum` says which came."""

    def __init__(self) -> None:
        self.signum: Optional[int] = None
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.task: Optional[asyncio.Future[Any]] = None

    def _on_signal(self, signum: int, _frame: Any) -> None:
        if self.signum is not None:
            raise KeyboardInterrupt
        self.signum = signum
        if self.loop is not None and self.task is not None:
            self.loop.call_soon_threadsafe(self.task.cancel)

    @contextlib.contextmanager
    def installed(self) -> Iterator[Stopper]:
        """The handlers for the block's length, the previous ones restored after (the main thread only: signals
        reach no other)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {s: signal.signal(s, self._on_signal) for s in STOP_SIGNALS}
        try:
            yield self
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    async def run(self, work: Awaitable[T]) -> Optional[T]:
        """`work` to its end, or None when a signal cut it."""
        task = asyncio.ensure_future(work)
        self.task = task
        if self.signum is not None:
            task.cancel()
        try:
            return await task
        except asyncio.CancelledError:
            if self.signum is None:
                raise
            return None


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

    await asyncio.gather(*(worker() for _ in range(min(c, plan.requests_per_step))))
    return out


async def _rate(
    sess: Any, plan: LoadPlan, rate: float, rng: random.Random, prompts: Callable[[], Prompt]
) -> list[RequestRecord]:
    start = time.perf_counter()
    tasks: list[asyncio.Task[RequestRecord]] = []
    offsets = arrival_offsets_s(rate, plan.burstiness, rng)
    try:
        for _ in range(plan.requests_per_step):
            at = next(offsets)
            if not at <= plan.seconds_per_step:  # past the step's end (or not a number)
                break
            await asyncio.sleep(max(0.0, start + at - time.perf_counter()))
            tasks.append(asyncio.create_task(_one(sess, plan, prompts())))
        return list(await asyncio.gather(*tasks))
    except asyncio.CancelledError:
        for t in tasks:
            t.cancel()
        raise


async def _drive(
    plan: LoadPlan, on_step: Callable[[str], None], calibrate: Callable[[list[RequestRecord]], None], stop: Stopper
) -> list[StepRecord]:
    stop.loop = asyncio.get_running_loop()
    rng = random.Random(plan.seed)
    most = max(plan.concurrencies or [1]) if not plan.rates else plan.requests_per_step
    steps: list[StepRecord] = []
    async with http.session(min(most, plan.requests_per_step)) as sess:
        if plan.warmup:
            on_step(f"warm-up: {plan.warmup} requests")

            async def warm_up() -> list[RequestRecord]:
                return [await _one(sess, plan, plan.prompts()) for _ in range(plan.warmup)]

            warm = await stop.run(warm_up())
            if warm is None:
                return steps
            calibrate(warm)
        for c, rate, prompts in plan.runs():
            if stop.signum is not None:
                break
            control = prompts is plan.control
            on_step((f"concurrency {c}" if c is not None else f"{rate:g} requests/s") + (" (control)" * control))
            cpu0, t0 = time.thread_time(), time.perf_counter()
            records = await stop.run(
                _concurrency(sess, plan, c, prompts) if c is not None else _rate(sess, plan, rate or 0.0, rng, prompts)
            )
            if records is None:
                break
            steps.append(StepRecord(c, rate, t0, time.perf_counter(), records, time.thread_time() - cpu0, control))
    return steps


def drive(
    plan: LoadPlan,
    on_step: Callable[[str], None] = lambda _s: None,
    calibrate: Callable[[list[RequestRecord]], None] = lambda _r: None,
) -> tuple[list[StepRecord], Optional[int]]:
    """Run the plan's steps in order; `calibrate` hears the warm-up's records (to size the prompts). Returns the
    steps that finished and the signal that stopped the sweep early (None: it ran to its end)."""
    stop = Stopper()
    with stop.installed():
        steps = asyncio.run(_drive(plan, on_step, calibrate, stop))
    return steps, stop.signum
