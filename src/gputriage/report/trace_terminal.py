"""`trace` in the terminal: time anatomy, syncs, kernel table, verdict and findings."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gputriage.model.finding import Finding
from gputriage.report.style import finding_text


def _bar(pct: float, width: int = 24) -> str:
    n = max(0, min(width, round(pct / 100 * width)))
    return "█" * n + " " * (width - n)


def render_verdict(report: dict[str, Any], console: Console) -> None:
    if report.get("error"):
        console.print(Text(f"\nprofile: {report['error']}", style="yellow"))
        return
    v = report.get("verdict") or {}
    if not v.get("bottleneck"):
        return
    line = Text("\ntrace verdict: ", style="bold")
    line.append(v["bottleneck"], style="bold magenta")
    line.append(f"  {v['share_pct']:.0f}% of the profiled window, GPU idle {v['gpu_idle_pct']:.0f}%", style="dim")
    console.print(line)
    console.print(Text("  do: " + v["decision"], style="green"))


def render_profile_window(report: dict[str, Any], effect: dict[str, float] | None, run_start: float | None,
                          console: Console) -> None:
    """When the profiler ran in a `run --profile`, what it cost the workload, and GPU-Util inside it."""
    window, held = report.get("profile_window_s"), report.get("profiler_held_s")
    if not window:
        return
    line = Text(f"profiled {window[1] - window[0]:.2f} s", style="dim")
    if run_start is not None:
        line.append(f" from +{window[0] - run_start:.1f} s", style="dim")
    if held:
        line.append(f"; the profiler held the workload {held[1] - held[0]:.1f} s in all (start-up {window[0] - held[0]:.1f} s, "
                    f"export {held[1] - window[1]:.1f} s), left out of the sampler's verdict", style="dim")
    if effect:
        line.append(f"; GPU-Util {effect['inside_pct']:.0f}% while profiled, {effect['outside_pct']:.0f}% otherwise",
                    style="dim")
    console.print(line)


def render(report: dict[str, Any], findings: list[Finding], console: Console, top: int = 10) -> None:
    for r in report["ranks"]:
        head = Text()
        head.append("gputriage trace", style="bold")
        head.append(f"  {r['file']}", style="")
        if r.get("rank") is not None:
            head.append(f"  rank {r['rank']}")
        head.append(f"\n{r['events']:,} events, {r['file_bytes'] / 1e6:.1f} MB, {r.get('gpu') or 'GPU ?'}, "
                    f"{r.get('step_count', 0)} profiler steps, read in {r.get('analysis_s', 0):.2f} s", style="dim")
        console.print(head)
        for p in r.get("problems", []):
            console.print(Text(f"  note: {p}", style="yellow"))
        for a in r.get("anatomy", []):
            console.print(Text(f"\nGPU {a['device']}: window {a['window_us'] / 1000:.1f} ms, busy {a['busy_pct']}%",
                               style="bold"))
            t = Table(box=None, show_header=False, pad_edge=False)
            t.add_column("what", no_wrap=True)
            t.add_column("pct", justify="right")
            t.add_column("bar")
            for k, v in sorted(a["busy"].items(), key=lambda kv: -kv[1]["us"]):
                t.add_row(f"busy  {k}", f"{v['pct']:.1f}%", Text(_bar(v["pct"]), style="green"))
            for k, v in sorted(a["idle"].items(), key=lambda kv: -kv[1]["us"]):
                t.add_row(f"idle  {k}", f"{v['pct']:.1f}%", Text(_bar(v["pct"]), style="red"))
            console.print(t)
            console.print(Text(f"{a['kernels']:,} kernels, median {a['median_kernel_us']} µs; "
                               f"{a['gaps']:,} idle gaps, median {a['median_gap_us']} µs; "
                               f"{a['underfilled_busy_pct']}% of busy time in kernels whose blocks cover under half the SMs",
                               style="dim"))
            steps = a.get("steps") or []
            if steps:
                durs = sorted(x["dur_us"] for x in steps)
                busy = sorted(x["gpu_busy_pct"] for x in steps)
                console.print(Text(f"{len(steps)} profiler steps: median {durs[len(durs) // 2] / 1000:.2f} ms "
                                   f"({durs[0] / 1000:.2f}–{durs[-1] / 1000:.2f}), GPU busy per step median "
                                   f"{busy[len(busy) // 2]:.0f}% ({busy[0]:.0f}–{busy[-1]:.0f})", style="dim"))
            syncs = a.get("syncs", {})
            if syncs.get("count"):
                console.print(Text(f"{syncs['count']} host synchronizations, host blocked "
                                   f"{syncs['host_blocked_us'] / 1000:.1f} ms; by op: " +
                                   ", ".join(f"{s['op']} ×{s['calls']} (GPU idle after: "
                                             f"{s['gpu_idle_after_us'] / 1000:.2f} ms)" for s in syncs["by_op"][:4]),
                                   style="dim"))
        kernels = r.get("kernels") or []
        if kernels:
            from gputriage.trace.kernel_kinds import SHORT_KIND, short_name

            kt = Table(header_style="bold", box=None, pad_edge=False)
            for col in ("kernel", "kind", "n", "ms", "%", "µs", "rate", "roof"):
                kt.add_column(col, no_wrap=True, overflow="ellipsis", max_width=32 if col == "kernel" else None,
                              justify="left" if col in ("kernel", "kind", "roof") else "right")
            for k in kernels[:top]:
                rate = (f"{k['achieved_tflops']:.0f} TF/s" if k.get("achieved_tflops") and k["kind"].startswith("gemm")
                        else f"{k['achieved_gbs']:.0f} GB/s" if k.get("achieved_gbs") else
                        f"{k['achieved_tflops']:.1f} TF/s" if k.get("achieved_tflops") else "")
                kt.add_row(Text(short_name(k["name"])), SHORT_KIND.get(k["kind"], k["kind"]), str(k["count"]),
                           f"{k['total_us'] / 1000:.1f}", f"{k['pct_of_kernel_time']:.0f}", f"{k['median_us']:.0f}" if k["median_us"] >= 100 else f"{k['median_us']:.1f}",
                           rate, {"memory": "mem", "compute": "math"}.get(k.get("roof", ""), ""))
            console.print()
            console.print(kt)
    mr = report.get("multi_rank")
    if mr:
        console.print(Text(f"\n{len(mr['per_rank'])} ranks, compared on {mr['compared_on']}; stragglers: "
                           f"{mr['stragglers'] or 'none'}; busy spread {mr['busy_pct_spread']} points", style="bold"))
    render_verdict(report, console)
    for f in findings:
        console.print(finding_text(f))
