"""`gputriage run -- CMD ARGS...`: run a workload, sample it, name its bottleneck."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import List, Optional

import typer

from gputriage.cli import exits
from gputriage.cli.common import budget_or_fail, err, fail, parse_fail_on, store_or_fail


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def _foreground() -> bool:
    """True when our process group owns the terminal: Ctrl-C then reaches the child directly."""
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except OSError:
        return False


def run(
    command: List[str] = typer.Argument(..., help="The command to run, after `--`."),
    store_path: Optional[Path] = typer.Option(None, "--store", help="Run store (SQLite). Default: the user data dir."),
    no_store: bool = typer.Option(False, "--no-store", help="Do not keep this run in the store."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout when the command ends."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Also write the JSON report to this file."),
    budget: Optional[Path] = typer.Option(None, "--budget", help="A TOML budget file; violations are findings."),
    fail_on: str = typer.Option("never", "--fail-on", help="Exit 1 (if the command succeeded) when a finding is at "
                                                             "or above: info, warn, critical, or never."),
    period: float = typer.Option(0.1, "--period", min=0.02, max=10.0, help="Sampling period in seconds."),
    no_gpm: bool = typer.Option(False, "--no-gpm", help="Do not read NVML GPM metrics."),
    profile: bool = typer.Option(False, "--profile", help="Profile a Python workload with torch.profiler and "
                                                          "merge the trace's verdict (Python commands only)."),
    profile_steps: int = typer.Option(10, "--profile-steps", help="Steps to profile after the warm-up."),
    profile_skip_s: float = typer.Option(2.0, "--profile-skip", help="Seconds after CUDA start-up before "
                                                                     "profiling (skips warm-up)."),
    keep_trace: Optional[Path] = typer.Option(None, "--keep-trace", help="Keep the profiler trace at this path."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No report in the terminal."),
) -> None:
    """Run COMMAND (no shell), pass its input and output through, and name what holds it back.
    Exits with the command's exit code."""
    from gputriage.backends.commands import start
    from gputriage.backends.host import Host
    from gputriage.backends.nvml import PynvmlBackend
    from gputriage.monitor.budget import check_samples
    from gputriage.model.reading import Unavailable
    from gputriage.monitor.session import Session

    threshold = parse_fail_on(fail_on)
    budget_obj = budget_or_fail(budget)
    store = store_or_fail(store_path, no_store)

    argv = list(command)
    env = dict(os.environ)
    trace_dir = None
    if profile:
        from gputriage.trace.inject import prepare

        try:
            argv, env, trace_dir = prepare(argv, env, steps=profile_steps, skip_s=profile_skip_s)
        except ValueError as exc:
            fail(str(exc), exits.USAGE)

    session = Session(PynvmlBackend(record=False, bounded=False), Host(), store, "run", list(command), period_s=period,
                      use_gpm=not no_gpm)
    child = start(argv, env)
    if isinstance(child, Unavailable):
        fail(child.detail, {"not_found": 127, "no_permission": 126}.get(child.reason, 126))
    session.start(child.pid)

    def forward(signum: int, _frame: object) -> None:
        if signum != signal.SIGINT or not _foreground():
            try:
                child.send_signal(signum)
            except ProcessLookupError:
                pass

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        while True:
            try:
                returncode = child.wait()
                break
            except KeyboardInterrupt:
                continue
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    code = _exit_code(returncode)

    extra = []
    trace_result = None
    if trace_dir is not None:
        from gputriage.trace.inject import analyze_dir

        trace_result, trace_findings = analyze_dir(trace_dir, keep=keep_trace)
        extra += trace_findings
    samples = session.sampler.samples
    if budget_obj is not None:
        extra += check_samples(budget_obj, samples, session.gpus, session.info)
    verdict, findings = session.finish(code, extra, trace=trace_result)
    report = {"schema": "gputriage.run", "version": 1, "id": session.run_id, "command": list(command),
              "exit_code": code, "samples": len(samples), "meta": session.meta, "verdict": verdict,
              "findings": [f.to_json() for f in findings]}
    if trace_result is not None:
        report["trace"] = trace_result
    if output is not None:
        try:
            output.write_text(json.dumps(report, indent=2, default=str))
        except OSError as exc:
            err.print(f"gputriage: cannot write {output}: {exc}")
    if as_json:
        sys.stdout.write(json.dumps(report, indent=2, default=str) + "\n")
    elif not quiet:
        from gputriage.report.run_terminal import render

        run_view = {"id": session.run_id, "kind": "run", "command": list(command), "exit_code": code,
                    "started": samples[0]["t"] if samples else None, "ended": samples[-1]["t"] if samples else None,
                    "meta": session.meta}
        render(run_view, verdict["per_gpu"], findings, err)
        if trace_result is not None:
            from gputriage.report.trace_terminal import render_profile_window, render_verdict

            render_verdict(trace_result, err)
            render_profile_window(trace_result, verdict.get("profiler_effect"), samples[0]["t"] if samples else None, err)
            if verdict.get("merged") and verdict["merged"].get("bottleneck"):
                m = verdict["merged"]
                err.print(f"[bold]verdict:[/] [bold magenta]{m['bottleneck']}[/] ({m.get('why', m['source'])})")
    if store is not None:
        store.close()
    if code != 0:
        raise typer.Exit(code)
    from gputriage.cli.common import exit_for

    raise typer.Exit(exit_for(findings, threshold))

