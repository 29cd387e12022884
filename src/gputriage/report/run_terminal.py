"""`run`, `watch`, `show` and `monitor()` in the terminal: the verdict per GPU, the timeline of
regimes, the host, the profiler's view, the findings."""

from __future__ import annotations

from typing import Optional, Sequence

from rich.console import Console
from rich.text import Text

from gputriage.model.finding import Severity
from gputriage.model.run import SIGNALLED, GpuVerdict, RunReport
from gputriage.model.safe_text import safe_text
from gputriage.report.libraries import used_said
from gputriage.report.loader_workers import terminal_line as loader_line
from gputriage.report.profile_terminal import render_profile_extra
from gputriage.report.ranks_terminal import render_ranks
from gputriage.report.run_memory_terminal import render_memory
from gputriage.report.stack_lines import about, line_text, main_thread
from gputriage.report.step_regimes import steady_span
from gputriage.report.step_regimes import terminal_lines as step_lines
from gputriage.report.style import finding_text, local_time
from gputriage.report.trace_terminal import render_profile_window, render_verdict

BLOCKS = " ▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[Optional[float]], width: int = 60) -> str:
    """Percentages as block characters, squeezed to `width` by taking maxima."""
    vals = [0.0 if v is None else float(v) for v in values]
    if len(vals) > width:
        step = len(vals) / width
        vals = [max(vals[int(i * step) : max(int((i + 1) * step), int(i * step) + 1)]) for i in range(width)]
    return "".join(BLOCKS[min(8, int(round(v / 12.5)))] for v in vals)


ROWS = (
    ("util_pct", "GPU-Util", "cyan"),
    ("sm_active_pct", "SM act. ", "cyan"),
    ("tensor_active_pct", "tensor  ", "magenta"),
    ("dram_active_pct", "DRAM    ", "blue"),
    ("power_pct", "power   ", "yellow"),
)
EDGE_PHASES = {"start-up": ("s", "dim"), "shut-down": ("e", "dim"), "warm-up": ("w", "dim")}
PHASE_STYLES = ("bold red", "bold magenta", "bold yellow", "bold blue", "bold green", "bold cyan")


def _phase_at(v: GpuVerdict, t: float) -> str | None:
    for r in v.timeline:
        if r.start_s <= t < r.end_s or (r is v.timeline[-1] and t >= r.start_s):
            return r.regime
    return None


def _timeline_plot(v: GpuVerdict, console: Console) -> None:
    """The run as rows of block characters on one time axis — GPU-Util, SM activity, tensor pipes, DRAM,
    power against its limit — over a row of phases (each regime a letter, the legend below)."""
    s = v.series
    n = len(s.t_s)
    if not n:
        return
    width = max(20, min(60, console.width - 14))
    for key, label, style in ROWS:
        values = getattr(s, key)
        if values and any(x is not None for x in values):
            line = Text(f"  {label} ", style="dim")
            line.append(sparkline(values, width), style=style)
            console.print(line)
    if not v.timeline:
        return
    cols = min(width, n)
    step = n / cols
    phases = [_phase_at(v, s.t_s[min(n - 1, int(i * step))]) for i in range(cols)]
    legend: dict[str, tuple[str, str]] = {}
    for p in phases:
        if p is not None and p not in legend:
            body = [q for q in legend if q not in EDGE_PHASES]
            legend[p] = EDGE_PHASES.get(p) or (p[0].upper(), PHASE_STYLES[len(body) % len(PHASE_STYLES)])
    line = Text("  phase    ", style="dim")
    for p in phases:
        mark, style = legend.get(p, (" ", "")) if p else (" ", "")
        line.append(mark, style=style)
    console.print(line)
    axis = f"  {'':9}0 s{'':{max(1, cols - 3 - len(f'{s.t_s[-1]:.0f} s'))}}{s.t_s[-1]:.0f} s"
    console.print(Text(axis, style="dim"))
    console.print(Text("  " + "  ".join(f"{m} {p}" for p, (m, _) in legend.items()), style="dim"))


def _header(r: RunReport) -> Text:
    head = Text()
    head.append(f"gputriage {r.kind}", style="bold")
    if r.id is not None:
        head.append(f" #{r.id}")
    if r.kind == "run":
        head.append(f"  {safe_text(' '.join(r.command), newline='⏎')}")  # kept in the store: one line, bounded
    head.append("\n")
    if r.started_s:
        head.append(local_time(r.started_s), style="dim")  # '?' for a time no calendar holds
    if r.started_s and r.ended_s:
        head.append(f"  {r.ended_s - r.started_s:.1f} s", style="dim")
    if r.exit_code is not None:
        signal = f" (killed by signal {r.exit_code - SIGNALLED})" if r.exit_code > SIGNALLED else ""
        head.append(f"  exit {r.exit_code}{signal}", style="dim" if r.exit_code == 0 else "red")
    if not r.complete:
        head.append(
            "  (incomplete: gputriage stopped before the run ended; judged from the samples it kept)", style="yellow"
        )
    return head


def _gpu(r: RunReport, key: str, v: GpuVerdict, console: Console) -> None:
    static = r.meta.gpus.get(key)
    name = (static.name if static else None) or ""
    line = Text(f"\nGPU {key} {name}: ", style="bold")
    if v.bottleneck is None:
        line.append(v.summary or "no verdict", style="dim")
        console.print(line)
        return
    line.append(v.bottleneck.value, style="bold magenta")
    line.append(f"  {v.share:.0%} of steady time, confidence {v.confidence:.2f}", style="dim")
    console.print(line)
    console.print(Text("  " + v.summary))
    if v.undecided_between:
        console.print(
            Text(
                f"  the sampler cannot tell {' / '.join(b.value for b in v.undecided_between)} apart: "
                "`gputriage run --profile -- ...` profiles the steady state and separates them",
                style="yellow",
            )
        )
    console.print(Text("  do: " + v.decision, style="green"))
    if v.impact is not None:
        console.print(Text(f"  gain: up to {v.impact:.0%} of the GPU's time (estimated)", style="dim"))
    if v.verify:
        console.print(Text(f"  verify: {v.verify}", style="dim"))
    for x in v.lines[:3]:  # where the host's time went, by the workload's Python lines
        console.print(Text("  at: " + line_text(x, r.meta.cwd), style="cyan"))
    _timeline_plot(v, console)
    if v.timeline:
        console.print(
            Text(
                "  timeline: " + " · ".join(f"{t.start_s:.0f}–{t.end_s:.0f}s {t.regime}" for t in v.timeline),
                style="dim",
            )
        )
        described = [t for t in v.timeline if t.summary]
        if len(described) > 1:  # a run of several regimes: each with its own cause
            for t in described:
                console.print(Text(f"    {t.start_s:.0f}–{t.end_s:.0f}s  {t.summary}", style="dim"))


def _host(r: RunReport, console: Console) -> None:
    h = r.host
    parts = []
    if h.workload_cpu_pct is not None:
        parts.append(
            f"workload CPU {h.workload_cpu_pct:.0f}% of a core"
            + (
                f" ({h.gpu_process_cpu_pct:.0f}% in the processes on the GPU)"
                if h.gpu_process_cpu_pct is not None
                else ""
            )
        )
    if h.top_thread_pct is not None:
        parts.append(f"busiest thread {h.top_thread_pct:.0f}%")
    if h.max_core_pct is not None:
        parts.append(f"busiest host core {h.max_core_pct:.0f}%")
    if h.iowait_pct is not None:
        parts.append(f"iowait {h.iowait_pct:.0f}%")
    if h.read_mb_per_s is not None:
        parts.append(f"reads {h.read_mb_per_s:.0f} MB/s")
    if h.write_mb_per_s:
        parts.append(f"writes {h.write_mb_per_s:.0f} MB/s")
    peaks = []
    if h.workload_rss_max_bytes is not None:
        peaks.append(f"workload memory {h.workload_rss_max_bytes / 2**30:.1f} GiB at most")
    if h.mem_available_min_bytes is not None:
        peaks.append(f"host memory available {h.mem_available_min_bytes / 2**30:.1f} GiB at least")
    if parts:
        console.print(
            Text("host: " + ", ".join(parts) + " (medians)" + ("; " + ", ".join(peaks) if peaks else ""), style="dim")
        )
    loader = loader_line(r)
    if loader is not None:
        console.print(loader)


def _stacks(r: RunReport, console: Console) -> None:
    """Where the workload's Python threads spent the steady state (the stack sampler), line by line."""
    s = r.stacks
    if s is None:
        return
    console.print(Text(f"python: the main thread {main_thread(s)} ({about(s)})", style="dim"))
    if s.libraries:  # the framework it runs on, and the CUDA that was built for
        console.print(Text(f"uses: {used_said(s.libraries, r.meta.system.get('gpu_libraries') or {})}", style="dim"))
    for x in s.lines:
        console.print(Text("  " + line_text(x, r.meta.cwd), style="dim"))


def _processes(r: RunReport, console: Console) -> None:
    """The processes seen on each GPU, where there was more than the one workload process."""
    for gpu in sorted({p.gpu for p in r.processes}):
        procs = [p for p in r.processes if p.gpu == gpu]
        if len(procs) < 2 and all(p.job for p in procs):
            continue
        parts = []
        for p in procs:
            part = f"pid {p.pid} ({p.whose(r.kind)}"
            if p.sm_util_mean_pct is not None:
                part += f", kernels {p.sm_util_mean_pct:.0f}% of the time"
            if p.used_max_bytes is not None:
                part += f", {p.used_max_bytes / 2**30:.1f} GiB"
            parts.append(part + ")")
        console.print(Text(f"GPU {gpu} processes: " + "; ".join(parts), style="dim"))


def _rate(v: float | None, unit: str) -> str | None:
    if v is None:
        return None
    return f"{v / 1e6:,.2f} M {unit}/s" if v >= 1e6 else f"{v:,.1f} {unit}/s" if v < 100 else f"{v:,.0f} {unit}/s"


def _throughput(r: RunReport, console: Console) -> None:
    """What the workload reported through gputriage.step(): the steady rate, per phase, and its MFU."""
    t = r.throughput
    if t is None:
        return
    rates = [
        x
        for x in (_rate(t.steps_per_s, "steps"), _rate(t.samples_per_s, "samples"), _rate(t.tokens_per_s, "tokens"))
        if x
    ]
    if t.metric_pattern is not None:
        rates.append(
            f"{t.metric_median:,.4g} (median of {t.metric_lines} line{'s' * (t.metric_lines != 1)} matching "
            f"{t.metric_pattern!r})"
            if t.metric_median is not None
            else f"no line matched {t.metric_pattern!r} in the steady state"
        )
    line = Text("throughput: ", style="bold")
    line.append(", ".join(rates) or "no steady rate", style="bold cyan")
    if not r.meta.gpus and t.steady_follows != "steps":  # no GPU timeline nor steps to tell the steady state
        span = " from its first report to its exit"
    else:
        span = steady_span(t)
    line.append(f"{span} ({t.source})", style="dim")
    console.print(line)
    if t.mfu_pct is not None:
        console.print(
            Text(
                f"  MFU {t.mfu_pct:.1f}%: {t.achieved_tflops:,.1f} TFLOP/s of the model's math against "
                f"{t.peak_tflops:,.0f} ({t.peak_source})",
                style="cyan",
            )
        )
    if t.mfu_bench_pct is not None:
        console.print(
            Text(
                f"  MFU {t.mfu_bench_pct:.1f}% against the {t.bench_tflops:,.0f} TFLOP/s measured here "
                f"({t.bench_source})",
                style="cyan",
            )
        )
    if t.mfu_pct is None and t.achieved_tflops is not None:
        console.print(
            Text(f"  the model's math: {t.achieved_tflops:,.1f} TFLOP/s (no datasheet for this GPU)", style="cyan")
        )
    for step_line in step_lines(t):
        console.print(step_line)
    if len(t.by_regime) > 1:
        console.print(
            Text(
                "  by phase: "
                + " · ".join(
                    f"{p.start_s:.0f}–{p.end_s:.0f}s {p.regime} "
                    + (
                        _rate(p.samples_per_s, "samples")
                        or _rate(p.tokens_per_s, "tokens")
                        or _rate(p.steps_per_s, "steps")
                        or (f"{p.metric_median:,.4g}" if p.metric_median is not None else "none")
                    )
                    for p in t.by_regime
                ),
                style="dim",
            )
        )


def _cost(r: RunReport, console: Console) -> None:
    """The GPU time paid for, its useful share, and at the user's price what the waste costs."""
    c = r.cost
    if c is None:
        return
    line = Text("cost: ", style="bold")
    line.append(f"{c.gpu_hours:,.3f} GPU-hours, {c.useful_pct:.0f}% useful by {c.measure}", style="bold")
    if c.cost is not None:
        line.append(
            f"; {c.cost:,.2f} {c.currency} at {c.price_per_gpu_hour:,.2f} {c.currency}/GPU-hour, "
            f"{c.waste_cost:,.2f} {c.currency} of it on "
            + ("idle SMs" if c.measure == "SM activity" else "an idle GPU")
            if c.waste_cost is not None
            else ""
        )
    console.print(line)
    if c.gpu_hours_at_twice is not None:
        console.print(
            Text(
                f"  at twice the activity ({2 * c.useful_pct:.0f}%) the same work needs "
                f"{c.gpu_hours_at_twice:,.3f} GPU-hours",
                style="dim",
            )
        )
    console.print(Text(f"  {c.formula}" + (f"; {c.note}" if c.note else ""), style="dim"))


def _blind_spots(r: RunReport, console: Console) -> None:
    """The verdicts this run could not see, grouped by why."""
    by_why: dict[str, list[str]] = {}
    how = ""
    for b in r.blind_spots:
        on = f" (GPU {', '.join(map(str, b.gpus))})" if b.gpus else ""
        by_why.setdefault(b.why + on, []).append(b.bottleneck.value)
        how = how or b.how
    for why, names in by_why.items():
        console.print(Text(f"cannot see {', '.join(names)}: {why}", style="dim"))
    if how:
        console.print(Text(f"  {how}", style="dim"))


def _without_gpu(r: RunReport, console: Console) -> None:
    """What a run with no GPU sampled could judge, from what it holds, and what it could not."""
    judged = [
        what
        for what, held in (
            ("the workload's throughput", r.throughput is not None),
            ("the host's CPU, disk and memory", r.host.max_core_pct is not None),
            ("where its Python threads spent their time", r.stacks is not None),
        )
        if held
    ]
    line = Text("\nno GPU verdict: ", style="bold yellow")
    said = ", ".join(judged[:-1]) + " and " + judged[-1] if len(judged) > 1 else "".join(judged)
    line.append((f"judged {said}; " if said else "") + "not judged: whether a GPU is used, ")
    line.append("starved, throttled or short of memory, nor what its time costs")
    console.print(line)
    console.print(Text("  `gputriage check` says why no GPU answers here (driver, devices, container)", style="dim"))


def render(r: RunReport, console: Console) -> None:
    console.print(_header(r))
    for note in r.notes:
        console.print(Text(note, style="yellow"))
    for key, v in r.verdict.per_gpu.items():
        _gpu(r, key, v, console)
    _throughput(r, console)
    _cost(r, console)
    _host(r, console)
    _stacks(r, console)
    render_ranks(r.ranks, console)
    _processes(r, console)
    render_memory(r, console)
    _blind_spots(r, console)
    profile = r.profile
    if profile is not None:
        render_verdict(profile.trace, profile.error, console)
        if r.meta.gpus or profile.window_s or profile.asked:
            render_profile_window(profile, r.verdict.profiler_effect, r.started_s, console)
        else:
            console.print(Text("not profiled: no GPU to profile", style="dim"))
        render_profile_extra(profile, r.started_s, console)
        m = r.verdict.merged
        if m is not None and m.bottleneck is not None:
            line = Text("verdict: ", style="bold")
            line.append(m.bottleneck.value, style="bold magenta")
            line.append(f" ({m.why or m.source})")
            console.print(line)
    extra = r.beside_verdict()  # the verdict is stated above, once
    if extra:
        console.print()
    for f in extra:
        console.print(finding_text(f, why=False))
    worst = max((f.severity for f in r.findings), default=Severity.ok)
    if worst == Severity.ok and r.meta.gpus:
        console.print(Text("\nno warning about this workload", style="green"))
    if not r.meta.gpus:
        _without_gpu(r, console)
