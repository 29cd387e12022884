"""How to verify a fix: each finding carries a command that shows whether what it advises worked — the same run
against a baseline of this one, a new trace of it, the same load test, the check again.

The command is made from what the report knows (the workload's command line, the run's id in the store, the trace
files, the load test's arguments), so a user can paste it as it is."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

import msgspec

from gputriage.model.finding import Finding

CHECK_FULL = ("fs.slow_reads",)  # read by `check --full` only


@dataclass(frozen=True)
class Context:
    """What the report knows to make a command of."""

    command: str  # the gputriage command that found it: check, run, watch, monitor, trace, bench, load, fleet
    workload: list[str] = field(default_factory=list)  # `run`'s command line
    run_id: int | None = None  # the run in the store
    baseline: str | None = None  # `run --baseline NAME`
    trace_files: list[str] = field(default_factory=list)
    load_args: list[str] = field(default_factory=list)  # `load`'s arguments, the URL first
    fleet_args: list[str] = field(default_factory=list)  # `fleet`'s: check or bench, then --ray ADDRESS


def command_for(f: Finding, ctx: Context) -> str:
    """The command that verifies a fix of `f`, or "" where none fits."""
    prefix = f.id.split(".", 1)[0]
    cmd = shlex.join(ctx.workload) if ctx.workload else ""
    if prefix == "load" and ctx.load_args:
        return "gputriage load " + shlex.join(ctx.load_args)
    if prefix == "fleet" and ctx.fleet_args:
        return "gputriage fleet " + shlex.join(ctx.fleet_args)
    if prefix == "bench":
        return "gputriage bench"
    if prefix == "trace":
        if cmd:
            return f"gputriage run --profile -- {cmd}"
        files = " ".join(shlex.quote(p) for p in ctx.trace_files)
        return f"gputriage trace NEW_TRACE.json (profiled again after the fix; this one: {files})" if files else ""
    if ctx.command == "run" and cmd:
        if ctx.baseline:
            return f"gputriage run --baseline {shlex.quote(ctx.baseline)} -- {cmd}"
        if ctx.run_id is not None:
            return f"gputriage baseline save before {ctx.run_id} && gputriage run --baseline before -- {cmd}"
        return f"gputriage run -- {cmd}"
    if ctx.command in ("watch", "monitor"):
        return "gputriage watch"
    if ctx.command == "check":
        return "gputriage check --full" if f.id in CHECK_FULL else "gputriage check"
    return ""


def with_verify(findings: list[Finding], ctx: Context) -> list[Finding]:
    """The findings, each with its verifying command (one it already carries is kept)."""
    return [f if f.verify else msgspec.structs.replace(f, verify=command_for(f, ctx)) for f in findings]
