"""`run` and `show` in the terminal: the verdict per GPU, the timeline of regimes, the findings."""

from __future__ import annotations

import datetime as dt
from typing import Any

from rich.console import Console
from rich.text import Text

from gputriage.model.bottleneck import Bottleneck
from gputriage.model.finding import Finding, Severity
from gputriage.report.style import finding_text


BLOCKS = " ▁▂▃▄▅▆▇█"


def sparkline(values: list, width: int = 60) -> str:
    """Percentages (one per second) as block characters, squeezed to `width` by taking maxima."""
    vals = [0.0 if v is None else float(v) for v in values]
    if len(vals) > width:
        step = len(vals) / width
        vals = [max(vals[int(i * step): max(int((i + 1) * step), int(i * step) + 1)]) for i in range(width)]
    return "".join(BLOCKS[min(8, int(round(v / 12.5)))] for v in vals)


def render(run: dict[str, Any], verdicts: dict[str, dict[str, Any]], findings: list[Finding], console: Console) -> None:
    cmd = " ".join(run.get("command", []))
    started = run.get("started")
    when = dt.datetime.fromtimestamp(started).strftime("%Y-%m-%d %H:%M:%S") if started else ""
    dur = (run["ended"] - started) if run.get("ended") and started else None
    head = Text()
    head.append(f"gputriage {run.get('kind', 'run')}", style="bold")
    if run.get("id") is not None:
        head.append(f" #{run['id']}")
    head.append(f"  {cmd}\n", style="")
    head.append(f"{when}", style="dim")
    if dur is not None:
        head.append(f"  {dur:.1f} s", style="dim")
    if run.get("exit_code") is not None:
        head.append(f"  exit {run['exit_code']}", style="dim" if run["exit_code"] == 0 else "red")
    if not run.get("complete", True):
        head.append("  (incomplete: gputriage stopped before the run ended)", style="yellow")
    console.print(head)
    gpus = run.get("meta", {}).get("gpus", {})
    if not gpus:
        nvml = run.get("meta", {}).get("system", {}).get("nvml", "NVML sees no GPU")
        console.print(Text(f"no GPU was sampled ({nvml}): no verdict about the GPU", style="yellow"))
    for idx, v in verdicts.items():
        name = gpus.get(str(idx), {}).get("name") or ""
        line = Text()
        line.append(f"\nGPU {idx} {name}: ", style="bold")
        if not v.get("bottleneck"):
            line.append(v.get("summary", "no verdict"), style="dim")
            console.print(line)
            continue
        line.append(v["bottleneck"], style="bold magenta")
        line.append(f"  {v['share']:.0%} of steady time, confidence {v['confidence']:.2f}", style="dim")
        console.print(line)
        console.print(Text("  " + v["summary"]))
        if v.get("undecided_between"):
            console.print(Text(f"  the sampler cannot tell {' / '.join(v['undecided_between'])} apart: "
                               "`gputriage run --profile -- ...` separates them", style="yellow"))
        console.print(Text("  do: " + v["decision"], style="green"))
        for key, label in (("util_pct", "GPU-Util"), ("sm_active_pct", "SM act. ")):
            values = (v.get("series") or {}).get(key) or []
            if any(x is not None for x in values):
                line = Text(f"  {label} ", style="dim")
                line.append(sparkline(values), style="cyan")
                console.print(line)
        tl = " · ".join(f"{r['start_s']:.0f}–{r['end_s']:.0f}s {r['regime']}" for r in v.get("timeline", []))
        if tl:
            console.print(Text("  timeline: " + tl, style="dim"))
    said = {f"run.{b.value}" for b in Bottleneck}  # the verdict above already says these
    extra = [f for f in findings if f.id not in said]
    if extra:
        console.print()
    for f in extra:
        console.print(finding_text(f, why=False))
    worst = max((f.severity for f in findings), default=Severity.ok)
    if worst == Severity.ok and gpus:
        console.print(Text("\nno warning about this workload", style="green"))
