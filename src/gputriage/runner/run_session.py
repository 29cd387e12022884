"""`run`'s session: a workload started and sampled, its profiler gated, and the run judged and kept.

Everything the session holds is released by one ExitStack, in the reverse order it was taken, whatever
ends the run (the workload's exit, a store that fails, an error of gputriage's own): the store, the
sampler and NVML, the workload's progress folder, the profiler's folder, the workload itself and the
signal handlers that forward to it, and the profile gate's thread. A command that cannot be started
leaves nothing in the store."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import shutil
import signal
import sqlite3
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from gputriage.backends.host import Host
from gputriage.backends.nvml import PynvmlBackend
from gputriage.backends.workload import Workload
from gputriage.diagnosis.budget import Budget
from gputriage.diagnosis.run.baseline import against
from gputriage.diagnosis.run.hang import HangWatch, said
from gputriage.diagnosis.run.judge import judge
from gputriage.diagnosis.run.throughput import against_bench
from gputriage.inworkload.progress import DIR_ENV as PROGRESS_ENV
from gputriage.model.baseline import Baseline
from gputriage.model.reading import Unavailable
from gputriage.model.run import RunReport
from gputriage.model.sample import Sample
from gputriage.runner.gate_keeper import GateKeeper
from gputriage.runner.profiled import read_profile
from gputriage.sampling.compile_report import read_compile_stats
from gputriage.sampling.oom_marks import keep, kept_folder
from gputriage.sampling.progress import ProgressReader
from gputriage.sampling.session import Session
from gputriage.sampling.store import Store
from gputriage.trace import inject


class WorkloadNotStarted(Exception):
    """The command could not be started (`reason`: not_found, no_permission, error); nothing was kept."""

    def __init__(self, why: Unavailable) -> None:
        super().__init__(why.detail)
        self.reason = why.reason


@dataclass
class RunPlan:
    """What `run` was asked for, checked by its caller (`api.run`)."""

    argv: list[str]
    env: dict[str, str]
    profile: str = "off"  # "on", "auto" or "off" (decided by the caller)
    profile_steps: int = 10
    profile_skip_s: float = 2.0
    keep_trace: Path | None = None
    period_s: float | None = None
    use_gpm: bool = True
    die_with_parent: bool = True
    stdout_to_stderr: bool = False
    metric: re.Pattern[str] | None = None
    flops_per_token: float | None = None
    flops_per_step: float | None = None
    price_per_gpu_hour: float | None = None
    currency: str = "USD"
    idle_held_min_s: float | None = None  # the user's minimum for run.idle_held (None: the threshold's)
    hang_after_s: float | None = None  # how long ranks wait in a collective before a hang is said (None: the default)
    budget: Budget | None = None
    baseline: tuple[Baseline, str] | None = None  # compared with at the end (the baseline and how to call it)
    command: list[str] = field(default_factory=list)  # as the user gave it (argv is what runs)


def run_workload(plan: RunPlan, store: Store | None) -> RunReport:
    """Start the workload, sample it, judge it, keep it in `store` (which the session closes). Raises the
    store's StoreError before the workload starts, and WorkloadNotStarted when it cannot start."""
    with contextlib.ExitStack() as stack:
        if store is not None:
            stack.callback(store.close)
        session = Session(
            PynvmlBackend(record=False, bounded=False),
            Host(),
            store,
            "run",
            plan.command or list(plan.argv),
            period_s=plan.period_s,
            use_gpm=plan.use_gpm,
        )
        stack.callback(session.finish)  # the sampler stopped, NVML shut down (once)
        session.meta.flops_per_token, session.meta.flops_per_step = plan.flops_per_token, plan.flops_per_step
        session.meta.price_per_gpu_hour, session.meta.currency = plan.price_per_gpu_hour, plan.currency
        session.meta.idle_held_min_s = plan.idle_held_min_s
        progress = Path(tempfile.mkdtemp(prefix="gputriage-progress-"))  # gputriage.step() writes its counts here
        stack.callback(shutil.rmtree, progress, ignore_errors=True)
        session.sampler.progress = ProgressReader(progress)
        argv, env = list(plan.argv), dict(plan.env, **{PROGRESS_ENV: str(progress)})
        folder = None
        if plan.profile != "off" and inject.is_python(argv):
            argv, env, folder = inject.prepare(
                argv, env, steps=plan.profile_steps, skip_s=plan.profile_skip_s, gated=True
            )
            stack.callback(inject.clean, folder)
            # the run row says where `gputriage profile RUN_ID` asks for a window, and whom SIGUSR1 reaches
            session.meta.profile_gate, session.meta.gputriage_pid = str(folder), os.getpid()
        elif inject.is_python(argv) or inject.launches_python(argv):  # no profiler: the counters and stacks alike
            env, hooks = inject.prepare_hooks(env)
            stack.callback(inject.clean, hooks)
        session.sampler.sinks.insert(0, hang_sink(HangWatch(plan.hang_after_s, node=session.meta.hostname)))
        session.open()  # the run is in the store before the workload starts (StoreError: nothing started)
        workload = Workload.start(
            argv, env, die_with_parent=plan.die_with_parent, stdout_to_stderr=plan.stdout_to_stderr, metric=plan.metric
        )
        if isinstance(workload, Unavailable):
            session.discard()  # no run took place: no "cut" run left behind
            raise WorkloadNotStarted(workload)
        stack.callback(workload.close)  # its signal handlers restored; ended if gputriage fails meanwhile
        session.start(workload.pid)
        gate = GateKeeper(session, folder, plan.profile, plan.keep_trace, say=_say) if folder is not None else None
        if gate is not None:
            stack.callback(gate.stop)
            _on_sigusr1(stack, gate)
        code = workload.wait()
        if gate is not None:
            gate.stop()
        profiled = read_profile(folder, plan.keep_trace, plan.profile, keeper=gate) if folder is not None else None
        recording = session.finish()
        recording.compile = read_compile_stats(progress)  # what torch.compile did, as the workload reported it
        # the allocator's snapshots (out of memory, growth), kept: the progress folder goes with the run
        recording.memory = keep(progress, kept_folder(store.path if store is not None else None, recording.run_id))
        report = judge(
            recording,
            code,
            profile=profiled,
            budget=plan.budget,
            metric=(plan.metric.pattern, workload.metric_points) if plan.metric is not None else None,
        )
        if store is not None:
            mfu_against_bench(store, report)
        if plan.baseline is not None:
            against(report, *plan.baseline)
        session.save(report)
        if session.store_error and session.store_error not in report.notes:
            report.notes.append(session.store_error)
        return report
    raise AssertionError("unreachable")  # pragma: no cover  (mypy: ExitStack may swallow exceptions)


def _say(message: str) -> None:
    sys.stderr.write(f"gputriage: {message}\n")


def hang_sink(watch: HangWatch, say: Callable[[str], None] = _say) -> Callable[[Sample], None]:
    """A sink of the sampler's samples that says a hang of the job's ranks once, while it runs: on stderr, and in the
    store (the sample that saw it carries it). First among the sinks: the windows see the hang with the sample."""

    def sink(s: Sample) -> None:
        if s.ranks:
            event = watch.update(s.t_s, s.ranks)
            if event is not None:
                s.hang = event
                say(said(event))

    return sink


def _on_sigusr1(stack: contextlib.ExitStack, gate: GateKeeper) -> None:
    """SIGUSR1 to `gputriage run` asks for a profile window (restored when the run ends); not from a thread."""
    try:
        previous = signal.signal(signal.SIGUSR1, lambda _s, _f: gate.request())
    except (ValueError, AttributeError):  # not the main thread, or no SIGUSR1 here
        return
    stack.callback(signal.signal, signal.SIGUSR1, previous)


def mfu_against_bench(db: Store, report: RunReport) -> None:
    """MFU against what `gputriage bench` measured on the lead GPU's machine, when it was benched."""
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
