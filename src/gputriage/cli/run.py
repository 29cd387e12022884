"""`gputriage run -- CMD ARGS...`: run a workload, sample it, name its bottleneck."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from gputriage.cli import exits
from gputriage.cli.common import (
    FAIL_ON_HELP,
    HANG_AFTER,
    IDLE_AFTER,
    api_errors,
    err,
    exit_for,
    fail,
    parse_fail_on,
    to_json,
)

PERIOD_HELP = (
    "Seconds between two readings of the GPU counters (default: the driver's own refresh of GPU-Util, "
    "0.2 s on an H200). Host and process readings stay at 1 s."
)


def run(
    command: list[str] = typer.Argument(..., metavar="COMMAND", help="The command to run."),
    store_path: Optional[Path] = typer.Option(
        None, "--store", metavar="FILE", help="Run store (SQLite). Default: the user data dir."
    ),
    no_store: bool = typer.Option(False, "--no-store", help="Do not keep this run in the store."),
    as_json: bool = typer.Option(
        False,
        "--json",
        help="Print the report as JSON on stdout when the command ends; "
        "the command's own output then goes to stderr, so the JSON "
        "can be piped (`| jq`).",
    ),
    output: Optional[Path] = typer.Option(
        None, "-o", "--output", metavar="FILE", help="Also write the JSON report to this file."
    ),
    budget: Optional[Path] = typer.Option(
        None, "--budget", metavar="FILE", help="A TOML budget file; violations are findings."
    ),
    fail_on: str = typer.Option(
        "never", "--fail-on", metavar="LEVEL", help="If the command succeeded: " + FAIL_ON_HELP
    ),
    period: Optional[float] = typer.Option(None, "--period", metavar="SECONDS", min=0.02, max=10.0, help=PERIOD_HELP),
    no_gpm: bool = typer.Option(False, "--no-gpm", help="Do not read NVML GPM metrics (as on GPUs before Hopper)."),
    profile: bool = typer.Option(
        False,
        "--profile",
        help="Profile a Python workload with torch.profiler once "
        "the sampler sees its steady state, and merge the "
        "trace's verdict (Python commands only). `--profile "
        "auto`: only where the sampler cannot decide (the "
        "default for Python commands).",
    ),
    no_profile: bool = typer.Option(
        False, "--no-profile", help="Never profile (not even where the sampler cannot decide)."
    ),
    profile_steps: int = typer.Option(
        10, "--profile-steps", metavar="N", min=1, help="Optimizer steps to profile at least."
    ),
    profile_skip_s: float = typer.Option(
        2.0,
        "--profile-skip",
        metavar="SECONDS",
        min=0.0,
        help="Seconds after CUDA start-up before profiling (skips the warm-up).",
    ),
    keep_trace: Optional[Path] = typer.Option(
        None, "--keep-trace", metavar="FILE", help="Keep the profiler trace at this path."
    ),
    flops_per_token: Optional[float] = typer.Option(
        None,
        "--flops-per-token",
        metavar="FLOPS",
        min=0.0,
        help="The model's FLOPs per token (forward and backward, e.g. "
        "6 x parameters for training): the report gives its MFU "
        "from the tokens/s the workload reports with "
        "gputriage.step(tokens=...).",
    ),
    flops_per_step: Optional[float] = typer.Option(
        None,
        "--flops-per-step",
        metavar="FLOPS",
        min=0.0,
        help="The model's FLOPs per step, for its MFU from the steps/s reported with gputriage.step().",
    ),
    metric: Optional[str] = typer.Option(
        None,
        "--metric",
        metavar="REGEX",
        help="Read the workload's throughput from its own output: the number "
        "the pattern's first group catches in a line (e.g. 'tokens/s: "
        "(\\S+)'); its output then passes through gputriage.",
    ),
    baseline: Optional[str] = typer.Option(
        None,
        "--baseline",
        metavar="NAME",
        help="Compare with this baseline (`gputriage baseline save`) at the end; "
        "falling below it beyond its noise is a warning (`run.regression`): "
        "with --fail-on warn, a CI gate.",
    ),
    price: Optional[float] = typer.Option(
        None,
        "--price",
        metavar="PER_GPU_HOUR",
        min=0.0,
        help="What a GPU-hour costs you: the report puts the run's cost and its "
        "waste in money (default: price_per_gpu_hour under [cost] in the "
        "config file; no price is assumed).",
    ),
    currency: str = typer.Option("USD", "--currency", metavar="CODE", help="The currency of --price."),
    idle_held_min_s: Optional[float] = IDLE_AFTER,
    hang_after_s: Optional[float] = HANG_AFTER,
    keep_workload: bool = typer.Option(
        False, "--keep-workload", help="If gputriage is killed, let the command run on (by default it gets SIGTERM)."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No report in the terminal."),
) -> None:
    """Run COMMAND (no shell), pass its input and output through, and name what holds it back.
    Exits with the command's exit code (128+N when signal N ended it)."""
    from gputriage import api

    threshold = parse_fail_on(fail_on)
    mode: Optional[str] = "on" if profile else "off" if no_profile else None
    if profile and len(command) > 1 and command[0] in api.PROFILE_MODES:  # `--profile auto CMD ...`
        mode, command = command[0], command[1:]
        if command[0] == "--" and len(command) > 1:  # `--profile auto -- CMD`: the separator came after
            command = command[1:]
    if profile and no_profile:
        fail("--profile and --no-profile contradict each other", exits.USAGE)
    with api_errors():
        try:
            report = api.run(
                command,
                store=False if no_store else store_path,
                budget=budget,
                period_s=period,
                use_gpm=not no_gpm,
                profile=mode,
                profile_steps=profile_steps,
                profile_skip_s=profile_skip_s,
                keep_trace=keep_trace,
                die_with_parent=not keep_workload,
                stdout_to_stderr=as_json,
                flops_per_token=flops_per_token,
                flops_per_step=flops_per_step,
                price_per_gpu_hour=price,
                currency=currency,
                metric=metric,
                baseline=baseline,
                idle_held_min_s=idle_held_min_s,
                hang_after_s=hang_after_s,
            )
        except api.WorkloadError as exc:
            fail(str(exc), exc.exit_code)
    text = to_json(report)
    if output is not None:
        try:
            output.write_text(text + "\n")
        except OSError as exc:
            err.print(f"gputriage: cannot write {output}: {exc.strerror or exc}")
    if as_json:
        sys.stdout.write(text + "\n")
    elif not quiet:
        from gputriage.report.run_terminal import render

        render(report, err)
    code = report.exit_code or 0
    raise typer.Exit(code if code != 0 else exit_for(report.findings, threshold))
