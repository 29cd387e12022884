"""`trace` in the terminal: time anatomy, syncs, kernel table, verdict and findings."""

from __future__ import annotations

from typing import Optional

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gputriage.model.run import ProfilerEffect, ProfileReport
from gputriage.model.safe_text import KERNEL_CHARS, NAME_CHARS, safe_text
from gputriage.model.trace import Anatomy, CompiledShare, KernelRow, RankAnalysis, TraceReport, rate_unit
from gputriage.report.kernel_names import SHORT_KIND, short_name
from gputriage.report.style import finding_text, hanging, plural


def _bar(pct: float, width: int = 24) -> str:
    n = max(0, min(width, round(pct / 100 * width)))
    return "█" * n


def render_verdict(trace: Optional[TraceReport], error: Optional[str], console: Console) -> None:
    if error:
        console.print(Text(f"\nprofile: {error}", style="yellow"))
        return
    v = trace.verdict if trace else None
    if trace is None or v is None or v.bottleneck is None:
        return
    # a verdict with no basis is the one judged rank's: its window was too thin to judge, say how thin
    judged = next((r for r in trace.ranks if r.verdict is not None), None)
    a = judged.main() if judged is not None and v.too_little and not v.basis else None
    if v.tentative and a is not None:
        line = Text(
            f"\ntoo little GPU work to judge: {a.kernels} kernel{'s' if a.kernels != 1 else ''}, "
            f"{a.busy_us / 1000:.1f} ms busy in a {a.window_us / 1000:.1f} ms window; a guess: ",
            style="bold",
        )
        line.append(v.bottleneck.value, style="magenta")
    else:
        line = Text("\ntrace verdict" + (" (tentative)" if v.tentative else "") + ": ", style="bold")
        line.append(v.bottleneck.value, style="magenta" if v.tentative else "bold magenta")
    line.append(f"  {v.share_pct:.0f}% of the profiled window, GPU idle {v.gpu_idle_pct:.0f}%", style="dim")
    if v.tentative:
        line.append(f", confidence {v.confidence:.2f}: profile the steady state for longer", style="dim")
    if v.basis:
        line.append(f"; from {v.basis} ({v.ranks_agreeing} of {v.ranks} ranks' own verdicts agree)", style="dim")
    console.print(line)  # what to do is the verdict's finding, below


def render_profile_window(
    profile: ProfileReport, effect: Optional[ProfilerEffect], run_start: Optional[float], console: Console
) -> None:
    """When the profiler ran in a `run --profile`, what it cost the workload, and GPU-Util inside it."""
    window, held = profile.window_s, profile.held_s
    if profile.mode == "auto" and not profile.asked:
        console.print(Text("not profiled (--profile auto): the sampler decided on its own", style="dim"))
    for why in profile.asked:
        console.print(Text(f"profiled: {why}", style="dim"))
    if not window:
        return
    line = Text(f"profiled {window[1] - window[0]:.2f} s", style="dim")
    if run_start is not None:
        line.append(f" from +{window[0] - run_start:.1f} s", style="dim")
    if held:
        line.append(
            f"; the profiler held the workload {held[1] - held[0]:.1f} s in all (start-up "
            f"{window[0] - held[0]:.1f} s, export {held[1] - window[1]:.1f} s), left out of the sampler's "
            "verdict",
            style="dim",
        )
    if effect:
        line.append(
            f"; GPU-Util {effect.inside_pct:.0f}% while profiled, {effect.outside_pct:.0f}% in the rest of "
            "the steady run",
            style="dim",
        )
    console.print(line)


def _anatomy(a: Anatomy, console: Console) -> None:
    console.print(Text(f"\nGPU {a.device}: window {a.window_us / 1000:.1f} ms, busy {a.busy_pct}%", style="bold"))
    t = Table(box=None, show_header=False, pad_edge=False)
    t.add_column("what", no_wrap=True)
    t.add_column("pct", justify="right")
    t.add_column("bar")
    for k, v in sorted(a.busy.items(), key=lambda kv: -kv[1].us):
        t.add_row(f"busy  {k}", f"{v.pct:.1f}%", Text(_bar(v.pct), style="green"))
    for k, v in sorted(a.idle.items(), key=lambda kv: -kv[1].us):
        t.add_row(f"idle  {k}", f"{v.pct:.1f}%", Text(_bar(v.pct), style="red"))
    console.print(t)
    console.print(
        Text(
            f"{plural(a.kernels, 'kernel')}, median {a.median_kernel_us} µs; "
            f"{plural(a.gaps, 'idle gap')}, median "
            f"{a.median_gap_us} µs; {a.underfilled_busy_pct}% of busy time in kernels whose blocks cover "
            "under half the SMs",
            style="dim",
        )
    )
    if a.allocator_calls:
        console.print(
            Text(
                "caching allocator: "
                + ", ".join(f"{n:,} {call}" for call, n in a.allocator_calls.items())
                + " calls in the window",
                style="dim",
            )
        )
    if a.steps:
        durs = sorted(x.dur_us for x in a.steps)
        busy = sorted(x.gpu_busy_pct for x in a.steps)
        n = len(a.steps)
        console.print(
            Text(
                f"{n} profiler step{'s' if n != 1 else ''}: median {durs[n // 2] / 1000:.2f} ms "
                f"({durs[0] / 1000:.2f}–{durs[-1] / 1000:.2f}), GPU busy per step median "
                f"{busy[n // 2]:.0f}% ({busy[0]:.0f}–{busy[-1]:.0f})",
                style="dim",
            )
        )
    s = a.syncs
    if s.count:
        console.print(
            Text(
                f"{s.count} host synchronization{'s' if s.count != 1 else ''}, host blocked "
                f"{s.host_blocked_us / 1000:.1f} ms; by op: "
                + ", ".join(
                    f"{x.op} ×{x.calls} (GPU idle after: {x.gpu_idle_after_us / 1000:.2f} ms)" for x in s.by_op[:4]
                ),
                style="dim",
            )
        )
    if a.host_work:
        console.print(
            Text(
                "host computed while the GPU waited: "
                + ", ".join(
                    f"{'after a read by ' if h.where == 'after_read' else ''}{h.op} {h.gpu_idle_us / 1000:.1f} ms "
                    f"({plural(h.gaps, 'gap')})"
                    for h in a.host_work[:4]
                ),
                style="dim",
            )
        )


def _rate(k: KernelRow) -> str:
    if k.achieved_tflops and k.kind.startswith("gemm"):
        return f"{k.achieved_tflops:.0f} {rate_unit(k.dtype or '').replace('TFLOP/s', 'TF/s')}"
    if k.achieved_gbs:
        return f"{k.achieved_gbs:.0f} GB/s"
    return f"{k.achieved_tflops:.1f} TF/s" if k.achieved_tflops else ""


def _kernels(kernels: list[KernelRow], top: int, console: Console) -> None:
    kt = Table(header_style="bold", box=None, pad_edge=False)
    for col in ("kernel", "kind", "n", "ms", "%", "µs", "rate", "roof"):
        kt.add_column(
            col,
            no_wrap=True,
            overflow="ellipsis",
            max_width=28 if col == "kernel" else None,
            justify="left" if col in ("kernel", "kind", "roof") else "right",
        )
    for k in kernels[:top]:
        name = short_name(safe_text(k.name, KERNEL_CHARS))
        kt.add_row(
            Text(name),
            SHORT_KIND.get(k.kind, k.kind),
            str(k.count),
            f"{k.total_us / 1000:.1f}",
            f"{k.pct_of_kernel_time:.0f}",
            f"{k.median_us:.0f}" if k.median_us >= 100 else f"{k.median_us:.1f}",
            _rate(k),
            {"memory": "mem", "compute": "math"}.get(k.roof or "", ""),
        )
    console.print()
    console.print(kt)


def _rank(r: RankAnalysis, top: int, console: Console) -> None:
    head = Text("gputriage trace", style="bold")
    head.append(f"  {r.file}")
    if r.rank is not None:
        head.append(f"  rank {r.rank}")
    steps = f"{r.step_count} profiler step{'s' if r.step_count != 1 else ''}, " if r.step_count else ""
    gpu = safe_text(r.gpu or "GPU ?", NAME_CHARS)
    head.append(
        f"\n{plural(r.events, 'event')}, {r.file_bytes / 1e6:.1f} MB, {gpu}, {steps}read in {r.analysis_s:.2f} s",
        style="dim",
    )
    console.print(head)
    for p in r.problems:
        console.print(hanging("  note: ", p, style="yellow"))
    for a in r.anatomy:
        _anatomy(a, console)
    if r.overlap:
        console.print(
            Text(
                f"communication: {r.overlap.comm_us / 1000:.1f} ms of collectives on GPU {r.main_device}, "
                f"{r.overlap.overlapped_pct:.0f}% overlapped by computation; only the rest (busy "
                "communication above) adds to step time",
                style="dim",
            )
        )
    if r.compiled:
        console.print(Text(compiled_line(r.compiled), style="dim"))
    if r.kernels and top > 0:
        _kernels(r.kernels, top, console)


def compiled_line(c: CompiledShare) -> str:
    """torch.compile's coverage of the GPU's work, in one sentence."""
    ops = ", ".join(f"{op} {us / 1000:.1f} ms" for op, us in c.outside_ops.items())
    return (
        f"torch.compile: {c.regions:,} compiled region{'s' if c.regions != 1 else ''}; {c.outside_pct:.0f}% of "
        f"GPU time ({c.outside_us / 1000:.1f} ms) launched outside them" + (f", by {ops}" if ops else "")
    )


def render(report: TraceReport, console: Console, top: int = 10) -> None:
    for r in report.ranks:
        _rank(r, top, console)
    for p in report.problems:
        console.print(hanging("not read: ", p, style="yellow"))
    mr = report.multi_rank
    if mr:
        console.print(
            Text(
                f"\n{len(mr.per_rank)} ranks, compared on {mr.compared_on}; stragglers: "
                f"{', '.join(map(str, mr.stragglers)) or 'none'}; busy spread {mr.busy_pct_spread} points",
                style="bold",
            )
        )
        for x in mr.per_rank:
            overlap = (
                f", communication overlapped {x.comm_overlapped_pct:.0f}%" if x.comm_overlapped_pct is not None else ""
            )
            verdict = x.bottleneck.value if x.bottleneck else "no verdict"
            console.print(
                Text(
                    f"  rank {x.rank if x.rank is not None else x.file}: {verdict}, busy {x.busy_pct}%{overlap}",
                    style="dim",
                )
            )
    render_verdict(report, None, console)
    for f in report.findings:
        console.print(finding_text(f))
