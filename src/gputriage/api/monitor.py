"""`monitor()`: a block of the caller's own code, sampled and judged."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import msgspec

from gputriage.api._common import (
    GputriageError,
    configured_idle_held_min_s,
    configured_price,
    open_budget,
    open_store,
)
from gputriage.backends.host import Host
from gputriage.backends.nvml import PynvmlBackend
from gputriage.diagnosis.run.judge import judge
from gputriage.diagnosis.run.live import live_labels
from gputriage.inworkload import allocator_counters, dynamo_counters, stack_sampler
from gputriage.model.run import RunReport
from gputriage.model.sample import Sample
from gputriage.sampling.compile_report import read_compile_stats
from gputriage.sampling.live import LastSecond
from gputriage.sampling.oom_marks import keep, kept_folder
from gputriage.sampling.progress import ProgressReader
from gputriage.sampling.session import Session
from gputriage.sampling.store import Store, StoreError


class Monitor:
    """`with gputriage.monitor() as m:` samples the GPUs, the host and this process around a block of
    the caller's code; after the block, `m.report` holds its verdict and findings.

    By default the sampler runs in a child process: a Python loop holding the GIL would otherwise
    starve a sampling thread (every read of /proc gives the GIL up and waits up to 5 ms for it back).
    `isolated=False` samples on a thread of this process (`live()` then shows the last second). Around its
    block, a thread reports PyTorch's caching allocator as `run`'s hook does
    (`gputriage.inworkload.allocator_counters`), so vram_pressure rests on what the allocator did, not on how
    full the GPU is, and another samples its Python threads' stacks (`gputriage.inworkload.stack_sampler`): the
    report names the lines of the block where the host's time went (`m.report.stacks`)."""

    def __init__(
        self,
        *,
        store: str | Path | bool | None = False,
        budget: str | Path | None = None,
        period_s: float | None = None,
        use_gpm: bool = True,
        kind: str = "monitor",
        pid: int | None = -1,
        isolated: bool = True,
        price_per_gpu_hour: float | None = None,
        currency: str | None = None,
        allocator_dir: str | None = None,
        idle_held_min_s: float | None = None,
    ) -> None:
        """`allocator_dir`: where this process's PyTorch allocator counters are reported (the sampler process
        of an isolated monitor is given its caller's); `idle_held_min_s`: how long a process must hold GPU memory
        idle to be named (else the config file's `[idle_held] after_minutes`, else 10 min)."""
        self._store, self._budget_path, self._period_s, self._use_gpm = store, budget, period_s, use_gpm
        price, unit = configured_price()  # the config file's, unless given: what the GPU time costs
        self._price, self._currency = (
            (price_per_gpu_hour, currency or unit) if price_per_gpu_hour is not None else (price, unit)
        )
        self._budget = open_budget(budget)
        self._idle_held_min_s = configured_idle_held_min_s(idle_held_min_s)
        self.kind, self.isolated = kind, isolated
        self.pid = os.getpid() if pid == -1 else pid  # None: no process tree (a watch of the machine)
        self.report: RunReport | None = None
        self.session: Session | None = None
        self._db: Store | None = None
        self._child: subprocess.Popen[str] | None = None
        self._allocator_dir = allocator_dir
        self._allocator_stop: threading.Event | None = None  # set: this monitor started the allocator's thread
        self._allocator_thread: threading.Thread | None = None
        self._stacks_thread: threading.Thread | None = None  # the stack sampler's, stopped with the allocator's
        self._dynamo_thread: threading.Thread | None = None  # torch.compile's record, and gputriage's code kept from it
        self._last_second: LastSecond | None = None  # `live()`'s reader of the last second

    def _report_allocator(self) -> None:
        """Sampling this process: report PyTorch's caching allocator from it, as `run`'s hook does."""
        if self.pid == os.getpid() and self._allocator_dir is None:
            self._allocator_dir = tempfile.mkdtemp(prefix="gputriage-monitor-")
            self._allocator_stop = threading.Event()
            self._allocator_thread = allocator_counters.start(self._allocator_dir, self._allocator_stop)
            self._stacks_thread = stack_sampler.start(self._allocator_dir, self._allocator_stop)
            self._dynamo_thread = dynamo_counters.start(self._allocator_dir, self._allocator_stop)

    def _stop_allocator(self) -> None:
        """The thread's last read, before the sampler's last sample."""
        if self._allocator_stop is not None and self._allocator_thread is not None:
            self._allocator_stop.set()
            self._allocator_thread.join(5.0)
            for t in (self._stacks_thread, self._dynamo_thread):
                if t is not None:
                    t.join(5.0)

    def _remove_allocator_dir(self) -> None:
        if self._allocator_stop is not None and self._allocator_dir is not None:
            shutil.rmtree(self._allocator_dir, ignore_errors=True)

    def __enter__(self) -> Monitor:
        self._report_allocator()
        try:
            return self._enter_child() if self.isolated else self._enter_here()
        except BaseException:
            self._stop_allocator()
            self._remove_allocator_dir()
            raise

    def _enter_here(self) -> Monitor:
        self._db = open_store(self._store)
        self.session = s = Session(
            PynvmlBackend(record=False, bounded=False),
            Host(),
            self._db,
            self.kind,
            [self.kind],
            period_s=self._period_s,
            use_gpm=self._use_gpm,
        )
        s.meta.price_per_gpu_hour, s.meta.currency = self._price, self._currency
        s.meta.idle_held_min_s = self._idle_held_min_s
        if self._allocator_dir is not None:
            s.sampler.progress = ProgressReader(self._allocator_dir)
        try:
            s.open()
        except StoreError as exc:
            s.finish()
            raise GputriageError(f"{exc}; use --no-store (store=False) to go without keeping it") from None
        s.start(self.pid)
        return self

    def _enter_child(self) -> Monitor:
        options = {
            "store": str(self._store) if isinstance(self._store, (str, Path)) else self._store,
            "budget": str(self._budget_path) if self._budget_path else None,
            "period_s": self._period_s,
            "use_gpm": self._use_gpm,
            "kind": self.kind,
            "pid": self.pid,
            "allocator_dir": self._allocator_dir,
            "price_per_gpu_hour": self._price,
            "currency": self._currency,
            "idle_held_min_s": self._idle_held_min_s,
        }
        self._child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from gputriage.api.monitor import _monitor_child; _monitor_child()",
                json.dumps(options),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._child.stdout is not None
        first = self._child.stdout.readline().strip()
        if first != "sampling":
            self._child.wait()
            raise GputriageError(first or "the sampler process could not start")
        return self

    def live(self) -> tuple[Sample, dict[int, str]] | None:
        """The latest sample, and each GPU's bottleneck over the last second, named as the exporter names it
        (None before any sample, and when the sampler runs in a child process)."""
        if self.session is None:
            return None
        recent = list(self.session.sampler.recent)
        if not recent:
            return None
        if self._last_second is None:
            self._last_second = LastSecond(self.session.nvml, self.session.gpus)
        static = {int(k): v for k, v in self.session.meta.gpus.items()}
        return recent[-1], {i: b.value for i, b in live_labels(self._last_second.metrics(recent), static).items()}

    def __exit__(self, *exc: object) -> None:
        self._stop_allocator()
        try:
            self._finish()
        finally:
            self._remove_allocator_dir()

    def _finish(self) -> None:
        if self._child is not None:
            assert self._child.stdin is not None and self._child.stdout is not None
            self._child.stdin.close()
            text = self._child.stdout.read()
            self._child.wait()
            try:
                self.report = msgspec.json.decode(text, type=RunReport)
            except msgspec.DecodeError:
                raise GputriageError(f"the sampler process failed: {text.strip()[:200]}") from None
            return
        assert self.session is not None
        if self._allocator_stop is not None:  # the in-process threads' last counts, written as they stopped
            self.session.wait_for_a_sample()
        recording = self.session.finish()
        if self._allocator_dir is not None:  # what torch.compile did in the block, as `run` reads it
            recording.compile = read_compile_stats(self._allocator_dir)
            # the allocator's snapshots (an out-of-memory error in the block), kept: the folder goes with the block
            store_path = self._db.path if self._db is not None else None
            recording.memory = keep(self._allocator_dir, kept_folder(store_path, recording.run_id))
        self.report = judge(recording, None, budget=self._budget)
        self.session.save(self.report)
        if self._db is not None:
            self._db.close()


def _monitor_child() -> None:
    """The sampler process of an isolated `Monitor`: samples until its stdin closes, prints the report."""
    options = json.loads(sys.argv[1])
    try:
        m = Monitor(isolated=False, **options)
        m.__enter__()
    except GputriageError as exc:
        print(exc, flush=True)
        return
    print("sampling", flush=True)
    sys.stdin.read()
    m.__exit__(None, None, None)
    sys.stdout.write(msgspec.json.encode(m.report).decode())


def monitor(
    *,
    store: str | Path | bool | None = False,
    budget: str | Path | None = None,
    period_s: float | None = None,
    use_gpm: bool = True,
    isolated: bool = True,
    price_per_gpu_hour: float | None = None,
    currency: str | None = None,
    idle_held_min_s: float | None = None,
) -> Monitor:
    """Sample the GPUs, the host and this process around a block of code: `with gputriage.monitor() as m:`,
    then `m.report` (a RunReport of kind "monitor"). Kept in the store only when `store` names one. The price
    (default: the config file's `[cost]`) puts the GPU time in money; `idle_held_min_s`: how long a process must
    hold GPU memory idle to be named (default: `[idle_held] after_minutes`, else 10 min)."""
    return Monitor(
        store=store,
        budget=budget,
        period_s=period_s,
        use_gpm=use_gpm,
        isolated=isolated,
        price_per_gpu_hour=price_per_gpu_hour,
        currency=currency,
        idle_held_min_s=idle_held_min_s,
    )
