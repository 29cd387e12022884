"""`run`: a workload sampled and judged (the session is `runner.run_session`'s); `show` and `runs`: what the
store holds."""

from __future__ import annotations

import os
import re
import shlex
import sqlite3
from pathlib import Path
from typing import Sequence

import msgspec

from gputriage.api._common import (
    GputriageError,
    NoStoreError,
    UsageError,
    WorkloadError,
    configured_hang_after_s,
    configured_idle_held_min_s,
    configured_price,
    open_budget,
    open_store,
    read_store,
)
from gputriage.api.baseline import load as load_baseline
from gputriage.diagnosis.run.cost import at_price, unpriced
from gputriage.diagnosis.run.judge import judge
from gputriage.diagnosis.run.snapshots import kept_report
from gputriage.diagnosis.verify import Context
from gputriage.model.memory import MemoryDump
from gputriage.model.run import RunMeta, RunReport
from gputriage.model.safe_text import utf8
from gputriage.runner.run_session import RunPlan, WorkloadNotStarted, run_workload
from gputriage.sampling.oom_marks import dumps, kept_folder
from gputriage.sampling.session import replay
from gputriage.sampling.store import StoreError
from gputriage.trace import inject

PROFILE_MODES = ("on", "auto", "off")
NOT_STARTED_EXIT = {"not_found": 127, "no_permission": 126}  # the shell's codes


def command_line(command: Sequence[str | os.PathLike[str]] | str) -> list[str]:
    """The command as an argument list: a list as given, a string split as a POSIX shell would split it (no
    shell runs it: no pipes, variables or globs). UsageError for an empty command or a string that does not
    split (an unclosed quote)."""
    if isinstance(command, (str, bytes)):
        if isinstance(command, bytes):
            raise UsageError("the command is bytes: give it as text, or as a list of arguments")
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise UsageError(f"the command line does not split into arguments: {exc}") from None
    else:
        try:
            argv = [os.fspath(a) for a in command]
        except TypeError:
            raise UsageError("the command's arguments must be text (or paths), as in ['python', 'train.py']") from None
        if any(not isinstance(a, str) for a in argv):
            raise UsageError("the command's arguments must be text (or paths), as in ['python', 'train.py']")
    if not argv or not argv[0]:
        raise UsageError("no command to run: give one, as in run(['python', 'train.py'])")
    return argv


def run(
    command: Sequence[str | os.PathLike[str]] | str,
    *,
    store: str | Path | bool | None = None,
    budget: str | Path | None = None,
    period_s: float | None = None,
    use_gpm: bool = True,
    profile: bool | str | None = None,
    profile_steps: int = 10,
    profile_skip_s: float = 2.0,
    keep_trace: str | Path | None = None,
    die_with_parent: bool = True,
    env: dict[str, str] | None = None,
    stdout_to_stderr: bool = False,
    flops_per_token: float | None = None,
    flops_per_step: float | None = None,
    price_per_gpu_hour: float | None = None,
    currency: str | None = None,
    metric: str | None = None,
    baseline: str | None = None,
    idle_held_min_s: float | None = None,
    hang_after_s: float | None = None,
) -> RunReport:
    """Run a command (no shell, stdio passed through), sample the GPUs, the host and its process tree,
    and judge it. `command`: a list of arguments (`["python", "train.py"]`), or one string split as a shell
    would split it (`"python train.py --lr 3e-4"`; no shell runs it). `profile`: a Python command profiles
    itself with torch.profiler, when the sampler sees the steady state ("on", True) or only where the sampler
    cannot decide ("auto"), and the trace's verdict is merged; None (the default): "auto" for a Python command,
    else "off". What the workload reports through `gputriage.step()` is its throughput; with `flops_per_token`
    (or `flops_per_step`), its MFU. Its cost is in GPU-hours, and in money at `price_per_gpu_hour` (default:
    the config file's `[cost]`; none is assumed). `metric`: a regular expression whose first group reads a
    rate in the workload's output lines ("tokens/s: (\\S+)"), reported next to the GPU's activity. `baseline`:
    a baseline's name (or a run id) to compare with at the end; a regression beyond its noise is a finding
    (`run.regression`). `idle_held_min_s`: how long a process must hold GPU memory idle to be named
    (`run.idle_held`; else the config file's `[idle_held] after_minutes`, else 10 min). The report's `exit_code` is
    the command's (128 + N when signal N ended it). `hang_after_s`: how long ranks of a distributed job wait in a
    collective for others before the hang is said, on stderr and in the store, while it runs (`run.rank_hang`;
    else the config file's `[hang] after_seconds`, else 300 s). Raises UsageError for a command or option that
    cannot be,
    WorkloadError when the command cannot start (nothing is kept then), GputriageError for a store that cannot take
    the run (before anything starts)."""
    argv = command_line(command)
    limits = open_budget(budget)
    kept_in = None if store is True or store is False else store
    against = load_baseline(baseline, kept_in) if baseline is not None else None  # a wrong name fails now
    try:
        pattern = re.compile(metric) if metric is not None else None
    except re.error as exc:
        raise UsageError(f"--metric: not a regular expression: {exc}") from None
    price, unit = configured_price()
    if price_per_gpu_hour is not None:
        price, unit = price_per_gpu_hour, currency or unit
    mode = {True: "on", False: "off"}.get(profile, profile) if isinstance(profile, bool) else profile
    if mode is not None and mode not in PROFILE_MODES:
        raise UsageError(f"--profile: {mode!r} is not one of {', '.join(PROFILE_MODES)}")
    if mode == "on" and not inject.is_python(argv):  # said before anything starts
        raise UsageError(f"--profile needs a Python command (python script.py ..., torchrun ...), not {argv[0]!r}")
    if mode is None:  # where the counters cannot decide (more often without GPM), the profiler does
        mode = "auto" if inject.is_python(argv) else "off"
    plan = RunPlan(
        argv=argv,
        env=dict(os.environ if env is None else env),
        profile=mode,
        profile_steps=profile_steps,
        profile_skip_s=profile_skip_s,
        keep_trace=Path(keep_trace) if keep_trace is not None else None,
        period_s=period_s,
        use_gpm=use_gpm,
        die_with_parent=die_with_parent,
        stdout_to_stderr=stdout_to_stderr,
        metric=pattern,
        flops_per_token=flops_per_token,
        flops_per_step=flops_per_step,
        price_per_gpu_hour=price,
        currency=unit,
        idle_held_min_s=configured_idle_held_min_s(idle_held_min_s),
        hang_after_s=configured_hang_after_s(hang_after_s),
        budget=limits,
        baseline=against,
        command=[utf8(a) for a in argv],
    )  # as JSON can hold it; argv runs as given
    db = open_store(store)
    try:
        return run_workload(plan, db)
    except StoreError as exc:
        raise GputriageError(f"{exc}; use --no-store (store=False) to run without keeping the run") from None
    except WorkloadNotStarted as exc:
        raise WorkloadError(str(exc), NOT_STARTED_EXIT.get(exc.reason, 126)) from None


def show(
    run_id: int, store: str | Path | None = None, price_per_gpu_hour: float | None = None, currency: str = "USD"
) -> RunReport:
    """A stored run's report; a run whose gputriage died (or from an older store) is judged from the
    samples it kept. With a price, its cost is counted again at that price."""
    report = _show(run_id, store)
    if price_per_gpu_hour is not None:
        if report.cost is not None:
            report.cost = at_price(report.cost, price_per_gpu_hour, currency)
        else:
            report.notes.append(unpriced(price_per_gpu_hour, currency))
    return report


def _show(run_id: int, store: str | Path | None = None) -> RunReport:
    db = open_store(store, readonly=True)
    assert db is not None
    try:
        row = db.run(run_id)
        if row is None:
            raise GputriageError(f"no run {run_id} in {db.path}")
        if row["kind"] == "load":
            raise GputriageError(
                f"{run_id} is a load test, not a run: `gputriage load --show {run_id}`, `gputriage report {run_id}`"
            )
        kept = dumps(kept_folder(db.path, run_id))  # the allocator's snapshots kept beside the store
        if row["report"]:
            try:
                return with_snapshots(msgspec.json.decode(row["report"], type=RunReport), kept)
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
                pass  # a damaged report: judged again from the samples below
        try:
            meta = msgspec.convert(row["meta"], RunMeta)
        except (msgspec.ValidationError, RecursionError):
            meta = RunMeta()
        rec = replay(db.samples(run_id), meta, kind=row["kind"], command=row["command"], run_id=run_id)
        rec.memory = kept
        report = judge(rec, row["exit_code"], complete=row["complete"])
        if db.skipped:
            report.notes.append(f"{db.skipped} damaged samples in the store were left out")
        return report
    except sqlite3.DatabaseError as exc:
        raise GputriageError(f"{db.path}: the run store is damaged ({exc})") from None
    finally:
        db.close()


def with_snapshots(report: RunReport, kept: list[MemoryDump]) -> RunReport:
    """A stored report judged before its workload's snapshots were (kept beside the store): the memory judge's report
    on them added, its findings as they were."""
    if report.memory is not None or not kept:
        return report
    report.memory = kept_report(kept, report.processes, Context(report.kind, report.command, report.id))
    if report.memory is not None:
        report.notes.append(
            "this run was judged before its allocator's snapshots were: the memory judge's report on them is added, "
            "its findings are as they were"
        )
    return report


def runs(store: str | Path | None = None, limit: int = 50) -> list[dict[str, object]]:
    """The runs and watches kept in the store, newest first; none before the first run made the default store
    (a store named that is not there is a GputriageError)."""
    if store is None:
        try:
            return read_store(None, lambda db: db.runs(limit))
        except NoStoreError:
            return []
    return read_store(store, lambda db: db.runs(limit))
