"""`run`: a workload sampled and judged; `show` and `runs`: what the store holds."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from gputriage.api._common import (
    GputriageError,
    UsageError,
    WorkloadError,
    configured_price,
    open_budget,
    open_store,
    read_store,
)
from gputriage.api.trace import analyze_trace
from gputriage.model.run import GpuStatic, ProfileReport, RunReport

if TYPE_CHECKING:
    from gputriage.sampling.session import Session
    from gputriage.sampling.store import Store


PROFILE_MODES = ("on", "auto", "off")


def run(command: Sequence[str], *, store: str | Path | bool | None = None, budget: str | Path | None = None,
        period_s: float | None = None, use_gpm: bool = True, profile: bool | str | None = None,
        profile_steps: int = 10, profile_skip_s: float = 2.0, keep_trace: str | Path | None = None,
        die_with_parent: bool = True, env: dict[str, str] | None = None,
        stdout_to_stderr: bool = False, flops_per_token: float | None = None,
        flops_per_step: float | None = None, price_per_gpu_hour: float | None = None,
        currency: str | None = None, metric: str | None = None, baseline: str | None = None) -> RunReport:
    """Run a command (no shell, stdio passed through), sample the GPUs, the host and its process tree,
    and judge it. `profile`: a Python command profiles itself with torch.profiler, when the sampler sees
    the steady state ("on", True) or only where the sampler cannot decide ("auto"), and the trace's verdict
    is merged; None (the default): "auto" for a Python command, else "off". What the workload reports through
    `gputriage.step()` is its throughput; with `flops_per_token` (or `flops_per_step`), its MFU. Its cost is in
    GPU-hours, and in money at `price_per_gpu_hour` (default: the config file's `[cost]`; none is assumed).
    `metric`: a regular expression whose first group reads a rate in the workload's output lines
    ("tokens/s: (\\S+)"), reported next to the GPU's activity. `baseline`: a baseline's name (or a run id) to
    compare with at the end; a regression beyond its noise is a finding (`run.regression`).
    The report's `exit_code` is the command's (128 + N when signal N ended it)."""
    from gputriage.backends.host import Host
    from gputriage.backends.nvml import PynvmlBackend
    from gputriage.backends.workload import Workload
    from gputriage.diagnosis.run.judge import judge
    from gputriage.inworkload.progress import DIR_ENV as progress_env
    from gputriage.model.reading import Unavailable
    from gputriage.sampling.progress import ProgressReader
    from gputriage.sampling.session import Session
    from gputriage.sampling.store import StoreError
    from gputriage.trace import inject

    limits = open_budget(budget)
    if baseline is not None:  # a name that is not there fails now, not after the workload
        from gputriage.api.baseline import load

        load(baseline, None if store is True or store is False else store)
    try:
        pattern = re.compile(metric) if metric is not None else None
    except re.error as exc:
        raise UsageError(f"--metric: not a regular expression: {exc}") from None
    price, unit = configured_price()
    if price_per_gpu_hour is not None:
        price, unit = price_per_gpu_hour, currency or unit
    argv, environ = list(command), dict(os.environ if env is None else env)
    mode = {True: "on", False: "off"}.get(profile, profile) if isinstance(profile, bool) else profile
    if mode is not None and mode not in PROFILE_MODES:
        raise UsageError(f"--profile: {mode!r} is not one of {', '.join(PROFILE_MODES)}")
    if mode == "on" and not inject.is_python(argv):  # said before anything starts
        raise UsageError(f"--profile needs a Python command (python script.py ..., torchrun ...), not {argv[0]!r}")
    db = open_store(store)
    session = Session(PynvmlBackend(record=False, bounded=False), Host(), db, "run", list(command), period_s=period_s,
                      use_gpm=use_gpm)
    if mode is None:  # where the counters cannot decide (more often without GPM), the profiler does
        mode = "auto" if inject.is_python(argv) else "off"
    session.meta.flops_per_token, session.meta.flops_per_step = flops_per_token, flops_per_step
    session.meta.price_per_gpu_hour, session.meta.currency = price, unit
    progress = Path(tempfile.mkdtemp(prefix="gputriage-progress-"))  # gputriage.step() writes its counts here
    environ[progress_env] = str(progress)
    session.sampler.progress = ProgressReader(progress)
    folder = None
    if mode != "off" and inject.is_python(argv):
        argv, environ, folder = inject.prepare(argv, environ, steps=profile_steps, skip_s=profile_skip_s, gated=True)
    try:
        session.open()
    except StoreError as exc:
        session.nvml.shutdown()
        if folder is not None:
            inject.clean(folder)
        shutil.rmtree(progress, ignore_errors=True)
        raise GputriageError(f"{exc}; use --no-store (store=False) to run without keeping the run") from None
    workload = Workload.start(argv, environ, die_with_parent=die_with_parent, stdout_to_stderr=stdout_to_stderr,
                              metric=pattern)
    if isinstance(workload, Unavailable):
        session.finish()
        if folder is not None:
            inject.clean(folder)
        shutil.rmtree(progress, ignore_errors=True)
        raise WorkloadError(workload.detail, {"not_found": 127, "no_permission": 126}.get(workload.reason, 126))
    session.start(workload.pid)
    gate = _GateKeeper(session, folder, mode) if folder is not None else None
    code = workload.wait()
    if gate is not None:
        gate.stop()
    profiled = _profile(folder, keep_trace, mode, gate.gate.reasons if gate else []) if folder is not None else None
    report = judge(session.finish(), code, profile=profiled, budget=limits,
                   metric=(metric, workload.metric_points) if metric is not None else None)
    shutil.rmtree(progress, ignore_errors=True)
    if db is not None:
        _against_bench(db, report)
    if baseline is not None:
        from gputriage.api.baseline import against

        against(report, baseline, None if store is True or store is False else store)
    session.save(report)
    if session.store_error and session.store_error not in report.notes:
        report.notes.append(session.store_error)
    if db is not None:
        db.close()
    return report


def _against_bench(db: Store, report: RunReport) -> None:
    """MFU against what `gputriage bench` measured on the lead GPU's machine, when it was benched."""
    import datetime as dt

    from gputriage.diagnosis.run.throughput import against_bench

    t = report.throughput
    lead = next(iter(report.verdict.per_gpu), None)
    static = report.meta.gpus.get(lead) if lead is not None else None
    if t is None or t.achieved_tflops is None or static is None or not static.uuid:
        return
    try:
        bench = db.last_bench(gpu_uuid=static.uuid)
    except sqlite3.Error:
        return
    rate = next((r.get("value") for r in (bench or {}).get("results", []) if r.get("name") == "matmul.bf16"), None)
    if bench is not None and isinstance(rate, (int, float)):
        when = dt.datetime.fromtimestamp(bench["started"]).strftime("%Y-%m-%d %H:%M")
        against_bench(t, float(rate), len(report.verdict.per_gpu), when)


class _GateKeeper:
    """Feeds the sampler's closed windows to the profile gate while the workload runs, and opens the
    injected profiler's gate when the gate says so (`diagnosis.run.profile_gate`)."""

    POLL_S = 0.25

    def __init__(self, session: Session, folder: Path, mode: str) -> None:
        from gputriage.diagnosis.run.profile_gate import ProfileGate

        self.session, self.folder = session, folder
        self.gate = ProfileGate(mode, {i: session.meta.gpus.get(str(i), GpuStatic()) for i in session.gpus})
        self.seen = dict.fromkeys(session.gpus, 0)
        self.judged = 0  # profiled windows compared with the run
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="gputriage-profile-gate", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        from gputriage.trace import inject

        while not self.done.wait(self.POLL_S):
            for i in self.session.gpus:
                series = self.session.windows.series[i]
                while self.seen[i] < len(series):
                    try:
                        w = series[self.seen[i]]
                    except IndexError:  # the window is being appended: next time
                        break
                    self.gate.add(i, w)
                    self.seen[i] += 1
            if self.gate.first(time.time()) is not None:
                inject.open_gate(self.folder, self.gate.asked)
            windows = inject.profiled_windows(self.folder)
            for profiled in windows[self.judged:]:
                self.judged += 1
                if self.gate.again(profiled) is not None:
                    inject.open_gate(self.folder, self.gate.asked)
            if self.gate.late() is not None:
                inject.open_gate(self.folder, self.gate.asked)

    def stop(self) -> None:
        self.done.set()
        self.thread.join(timeout=5)


def _profile(folder: Path, keep: str | Path | None, mode: str = "on", asked: list[str] | None = None) -> ProfileReport:
    from gputriage.trace import inject

    try:
        written = inject.read_back(folder, Path(keep) if keep is not None else None)
        if mode == "auto" and not asked:  # the sampler decided: nothing to profile, nothing went wrong
            return ProfileReport(mode=mode)
        if not written.traces and mode == "on" and not asked:
            written.error = ("not profiled: the run never reached a steady state the sampler could see (three 1 s "
                             "windows with one verdict) before it ended")
        out = ProfileReport(log=written.log, error=written.error, window_s=written.window_s, held_s=written.held_s,
                            held_all_s=written.held_all_s,
                            kept_trace=", ".join(str(k) for k in written.kept) or None, mode=mode,
                            asked=list(asked or []))
        if written.traces:
            try:
                out.trace = analyze_trace(written.traces)
            except GputriageError as exc:
                out.error = str(exc)
        return out
    finally:
        inject.clean(folder)


def show(run_id: int, store: str | Path | None = None, price_per_gpu_hour: float | None = None,
         currency: str = "USD") -> RunReport:
    """A stored run's report; a run whose gputriage died (or from an older store) is judged from the
    samples it kept. With a price, its cost is counted again at that price."""
    report = _show(run_id, store)
    if price_per_gpu_hour is not None and report.cost is not None:
        from gputriage.diagnosis.run.cost import at_price

        report.cost = at_price(report.cost, price_per_gpu_hour, currency)
    return report


def _show(run_id: int, store: str | Path | None = None) -> RunReport:
    import msgspec

    from gputriage.diagnosis.run.judge import judge
    from gputriage.model.run import RunMeta
    from gputriage.sampling.session import replay

    db = open_store(store, readonly=True)
    assert db is not None
    try:
        row = db.run(run_id)
        if row is None:
            raise GputriageError(f"no run {run_id} in {db.path}")
        if row["kind"] == "load":
            raise GputriageError(f"{run_id} is a load test, not a run: `gputriage load --show {run_id}`, "
                                 f"`gputriage report {run_id}`")
        if row["report"]:
            try:
                return msgspec.json.decode(row["report"], type=RunReport)
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
                pass  # a damaged report: judged again from the samples below
        try:
            meta = msgspec.convert(row["meta"], RunMeta)
        except (msgspec.ValidationError, RecursionError):
            meta = RunMeta()
        rec = replay(db.samples(run_id), meta, kind=row["kind"], command=row["command"], run_id=run_id)
        report = judge(rec, row["exit_code"], complete=row["complete"])
        if db.skipped:
            report.notes.append(f"{db.skipped} damaged samples in the store were left out")
        return report
    except sqlite3.DatabaseError as exc:
        raise GputriageError(f"{db.path}: the run store is damaged ({exc})") from None
    finally:
        db.close()


def runs(store: str | Path | None = None, limit: int = 50) -> list[dict[str, object]]:
    """The runs and watches kept in the store, newest first."""
    return read_store(store, lambda db: db.runs(limit))


