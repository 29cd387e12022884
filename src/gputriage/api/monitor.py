"""`monitor()`: a block of the caller's own code, sampled and judged."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from gputriage.api._common import GputriageError, configured_price, open_budget, open_store
from gputriage.model.run import RunReport

if TYPE_CHECKING:
    import subprocess

    from gputriage.model.sample import Sample
    from gputriage.sampling.session import Session
    from gputriage.sampling.store import Store


class Monitor:
    """`with gputriage.monitor() as m:` samples the GPUs, the host and this process around a block of
    the caller's code; after the block, `m.report` holds its verdict and findings.

    By default the sampler runs in a child process: a Python loop holding the GIL would otherwise
    starve a sampling thread (every read of /proc gives the GIL up and waits up to 5 ms for it back).
    `isolated=False` samples on a thread of this process (`live()` then shows the last second)."""

    def __init__(self, *, store: str | Path | bool | None = False, budget: str | Path | None = None,
                 period_s: float | None = None, use_gpm: bool = True, kind: str = "monitor",
                 pid: int | None = -1, isolated: bool = True, price_per_gpu_hour: float | None = None,
                 currency: str | None = None) -> None:
        self._store, self._budget_path, self._period_s, self._use_gpm = store, budget, period_s, use_gpm
        price, unit = configured_price()  # the config file's, unless given: what the GPU time costs
        self._price, self._currency = (price_per_gpu_hour, currency or unit) if price_per_gpu_hour is not None \
            else (price, unit)
        self._budget = open_budget(budget)
        self.kind, self.isolated = kind, isolated
        self.pid = os.getpid() if pid == -1 else pid  # None: no process tree (a watch of the machine)
        self.report: RunReport | None = None
        self.session: Session | None = None
        self._db: Store | None = None
        self._child: subprocess.Popen[str] | None = None

    def __enter__(self) -> Monitor:
        if self.isolated:
            return self._enter_child()
        from gputriage.backends.host import Host
        from gputriage.backends.nvml import PynvmlBackend
        from gputriage.sampling.session import Session
        from gputriage.sampling.store import StoreError

        self._db = open_store(self._store)
        self.session = s = Session(PynvmlBackend(record=False, bounded=False), Host(), self._db, self.kind,
                                   [self.kind], period_s=self._period_s, use_gpm=self._use_gpm)
        s.meta.price_per_gpu_hour, s.meta.currency = self._price, self._currency
        try:
            s.open()
        except StoreError as exc:
            s.finish()
            raise GputriageError(f"{exc}; use --no-store (store=False) to go without keeping it") from None
        s.start(self.pid)
        return self

    def _enter_child(self) -> Monitor:
        import json
        import subprocess
        import sys

        options = {"store": str(self._store) if isinstance(self._store, (str, Path)) else self._store,
                   "budget": str(self._budget_path) if self._budget_path else None, "period_s": self._period_s,
                   "use_gpm": self._use_gpm, "kind": self.kind, "pid": self.pid}
        self._child = subprocess.Popen([sys.executable, "-c", "from gputriage.api.monitor import _monitor_child; "
                                                              "_monitor_child()",
                                        json.dumps(options)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._child.stdout is not None
        first = self._child.stdout.readline().strip()
        if first != "sampling":
            self._child.wait()
            raise GputriageError(first or "the sampler process could not start")
        return self

    def live(self) -> tuple[Sample, dict[int, str]] | None:
        """The latest sample, and each GPU's bottleneck over the last second (None before any sample, and
        when the sampler runs in a child process)."""
        from gputriage.diagnosis.classify import label
        from gputriage.model.run import GpuStatic
        from gputriage.sampling.windows import metrics_of

        if self.session is None:
            return None
        recent = list(self.session.sampler.recent)
        if not recent:
            return None
        last = [x for x in recent if x.t_s >= recent[-1].t_s - 1.0]
        static = {int(k): v for k, v in self.session.meta.gpus.items()}
        return recent[-1], {i: label(metrics_of(last, i), static.get(i, GpuStatic()))[0].value
                            for i in self.session.gpus}

    def __exit__(self, *exc: object) -> None:
        if self._child is not None:
            import msgspec

            assert self._child.stdin is not None and self._child.stdout is not None
            self._child.stdin.close()
            text = self._child.stdout.read()
            self._child.wait()
            try:
                self.report = msgspec.json.decode(text, type=RunReport)
            except msgspec.DecodeError:
                raise GputriageError(f"the sampler process failed: {text.strip()[:200]}") from None
            return
        from gputriage.diagnosis.run_judge import judge

        assert self.session is not None
        self.report = judge(self.session.finish(), None, budget=self._budget)
        self.session.save(self.report)
        if self._db is not None:
            self._db.close()


def _monitor_child() -> None:
    """The sampler process of an isolated `Monitor`: samples until its stdin closes, prints the report."""
    import json
    import sys

    import msgspec

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


def monitor(*, store: str | Path | bool | None = False, budget: str | Path | None = None,
            period_s: float | None = None, use_gpm: bool = True, isolated: bool = True) -> Monitor:
    """Sample the GPUs, the host and this process around a block of code: `with gputriage.monitor() as m:`,
    then `m.report` (a RunReport of kind "monitor"). Kept in the store only when `store` names one."""
    return Monitor(store=store, budget=budget, period_s=period_s, use_gpm=use_gpm, isolated=isolated)


