"""`gputriage load URL`: a serving endpoint under load — latency against throughput, and why it rises."""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import typer

from gputriage.cli import exits
from gputriage.cli.common import FAIL_ON_HELP, api_errors, exit_for, fail, out, parse_fail_on, print_json, spinner
from gputriage.model.load import LoadReport


class _Terminated(BaseException):
    """SIGTERM outside the sweep (while the server is looked up, or the report kept)."""


def _on_sigterm(_signum: int, _frame: Any) -> None:
    raise _Terminated


@contextlib.contextmanager
def _terminable() -> Iterator[None]:
    """SIGTERM ends the command with one line and exit 143 (the sweep itself keeps its finished steps first)."""
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    except _Terminated:
        fail("terminated", exits.TERMINATED)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _cut_exit(report: LoadReport) -> int:
    """A sweep stopped by a signal: its code (130 for SIGINT, 143 for SIGTERM), after one line on stderr."""
    assert report.cut is not None
    code = exits.INTERRUPTED if report.cut.signal == "SIGINT" else exits.TERMINATED
    kept = f" and kept as load {report.id}" if report.id is not None else ""
    done = len(report.steps)
    sys.stderr.write(
        f"gputriage: the sweep was cut at step {report.cut.step} of {report.cut.steps} "
        f"({report.cut.signal}): {done} finished step{'s' * (done != 1)} printed{kept}\n"
    )
    return code


def _numbers(text: Optional[str], kind: type, what: str) -> list:
    if not text:
        return []
    try:
        return [kind(x) for x in text.split(",") if x.strip()]
    except ValueError:
        fail(f"{what}: {text!r} is not a comma-separated list of numbers", exits.USAGE)


def load(
    url: Optional[str] = typer.Argument(
        None,
        metavar="URL",
        help="The server, e.g. http://localhost:8000 (OpenAI-compatible: /v1/completions, /v1/models).",
    ),
    concurrency: Optional[str] = typer.Option(
        None,
        "--concurrency",
        metavar="N,N,...",
        help="The sweep's steps (default 1, 2, 4, ... up to --max-concurrency).",
    ),
    max_concurrency: int = typer.Option(32, "--max-concurrency", metavar="N", help="The sweep's last step."),
    rate: Optional[str] = typer.Option(
        None, "--rate", metavar="R,R,...", help="Request-rate runs instead of a sweep: requests/s, one step each."
    ),
    burstiness: float = typer.Option(
        1.0,
        "--burstiness",
        metavar="B",
        help="Gamma shape of the gaps between arrivals: 1 is Poisson, lower is burstier.",
    ),
    requests: int = typer.Option(64, "--requests", metavar="N", help="Requests per step, at most."),
    seconds: float = typer.Option(60.0, "--seconds", metavar="S", help="Seconds per step, at most."),
    warmup: int = typer.Option(2, "--warmup", metavar="N", help="Requests before the first step, not counted."),
    input_tokens: int = typer.Option(256, "--input-tokens", metavar="N", help="Synthetic prompts' mean length."),
    output_tokens: int = typer.Option(128, "--output-tokens", metavar="N", help="max_tokens of every request."),
    spread: float = typer.Option(
        0.0, "--spread", metavar="F", help="Prompt length's standard deviation, as a share of the mean."
    ),
    long_prompts: float = typer.Option(
        0.0, "--long-prompts", metavar="SHARE", help="A mix: this share of prompts is --long-factor times longer."
    ),
    long_factor: float = typer.Option(8.0, "--long-factor", metavar="X"),
    control: bool = typer.Option(
        True,
        "--control/--no-control",
        help="With --long-prompts: run each step again "
        "with every prompt at the normal length, to measure what the long ones cost.",
    ),
    prompts: Optional[Path] = typer.Option(
        None,
        "--prompts",
        metavar="FILE.jsonl",
        help='Prompts to send in turn: {"prompt": ..., "max_tokens": ...} a line.',
    ),
    chat: bool = typer.Option(False, "--chat", help="Use /v1/chat/completions."),
    model: Optional[str] = typer.Option(
        None, "--model", metavar="NAME", help="The model to ask for (default: /v1/models' first)."
    ),
    slo: Optional[str] = typer.Option(
        None, "--slo", metavar="SPEC", help="e.g. ttft=500ms,tpot=50ms (also itl, e2e): goodput and the knee by it."
    ),
    slo_percentile: int = typer.Option(90, "--slo-percentile", metavar="P", help="50, 90 or 99."),
    timeout: float = typer.Option(120.0, "--timeout", metavar="S", help="Per request."),
    ignore_eos: bool = typer.Option(False, "--ignore-eos", help="Ask for exactly --output-tokens (vLLM, SGLang)."),
    tokenizer: Optional[str] = typer.Option(
        None,
        "--tokenizer",
        metavar="PATH",
        help="Count the tokens the "
        "server's usage lacks with this tokenizer (a local tokenizer.json or "
        "the model's folder; nothing is downloaded). Else one per chunk.",
    ),
    no_metrics: bool = typer.Option(False, "--no-metrics", help="Do not scrape the server's /metrics."),
    no_gpus: bool = typer.Option(False, "--no-gpus", help="Do not sample this machine's GPUs."),
    weights_gb: Optional[float] = typer.Option(
        None,
        "--weights-gb",
        metavar="GB",
        help="The model's weights in GB: decode is set against memory bandwidth / weights.",
    ),
    show: Optional[int] = typer.Option(None, "--show", metavar="ID", help="Show a kept load test, and exit."),
    store_path: Optional[Path] = typer.Option(None, "--store", metavar="FILE", help="Where it is kept (SQLite)."),
    no_store: bool = typer.Option(False, "--no-store", help="Do not keep it."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON (schema gputriage.load/1)."),
    fail_on: str = typer.Option("never", "--fail-on", metavar="LEVEL", help=FAIL_ON_HELP),
) -> None:
    """Load an OpenAI-compatible server step by step (a concurrency sweep, or Poisson request rates): TTFT,
    inter-token latency, TPOT and end-to-end percentiles, requests and tokens per second, goodput under SLOs
    and the knee; the GPUs here and the server's /metrics (vLLM, SGLang, TGI) meanwhile; and why latency
    rises — KV cache full, queueing at the cap, prefill stalling decode, a CPU-bound server, no VRAM headroom —
    or that the generator itself was the bottleneck."""
    # the library at the command's start: `gputriage --help` and the other commands stay quick
    from gputriage.api.load import load as run_load
    from gputriage.api.load import parse_slo, show_load
    from gputriage.report.load_terminal import render

    threshold = parse_fail_on(fail_on)
    with _terminable(), api_errors():
        if show is not None:
            report = show_load(show, store_path)
        else:
            if url is None:
                fail("give the server's URL (or --show ID)", exits.USAGE)
            with spinner() as say:
                report = run_load(
                    url,
                    concurrency=_numbers(concurrency, int, "--concurrency"),
                    max_concurrency=max_concurrency,
                    rates=_numbers(rate, float, "--rate"),
                    burstiness=burstiness,
                    requests_per_step=requests,
                    seconds_per_step=seconds,
                    warmup=warmup,
                    input_tokens=input_tokens,
                    output_tokens=output_tokens,
                    spread=spread,
                    long_prompt_share=long_prompts,
                    long_prompt_factor=long_factor,
                    long_prompt_control=control,
                    tokenizer=tokenizer,
                    prompts_file=prompts,
                    chat=chat,
                    model=model,
                    slo=parse_slo(slo, slo_percentile) if slo else None,
                    timeout_s=timeout,
                    ignore_eos=ignore_eos,
                    metrics=not no_metrics,
                    sample_gpus=not no_gpus,
                    weight_bytes=weights_gb * 1e9 if weights_gb is not None else None,
                    store=False if no_store else store_path,
                    progress=say,
                )
            if report.cut is not None and not report.steps:
                fail(
                    f"the sweep was cut at step {report.cut.step} of {report.cut.steps} ({report.cut.signal}) "
                    "before a step finished: nothing to show or keep",
                    exits.INTERRUPTED if report.cut.signal == "SIGINT" else exits.TERMINATED,
                )
    if as_json:
        print_json(report)
    else:
        render(report, out)
    cut_now = report.cut is not None and show is None  # a kept test that was cut is shown like any other
    raise typer.Exit(_cut_exit(report) if cut_now else exit_for(report.findings, threshold))
