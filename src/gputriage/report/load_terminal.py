"""`load` in the terminal: a row per step (latency percentiles, throughput, goodput, the GPU, the server and this
machine meanwhile), the latency–throughput curve, the knee, the findings. No figure is ever cut: columns that
do not fit the width go to a second table keyed by the step's load."""

from __future__ import annotations

from typing import Callable

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gputriage.model.load import Knee, LoadReport, LoadStep
from gputriage.model.safe_text import NAME_CHARS, safe_text
from gputriage.report.style import finding_text

Column = tuple[str, Callable[[LoadStep], str]]  # header, cell
GAP = 2  # spaces between columns (rich's padding of 1 on each side)


def _ms(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v / 1000:.2f}s" if v >= 10_000 else f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


def _load(s: LoadStep) -> str:
    load = str(s.concurrency) if s.concurrency is not None else f"{s.rate_per_s:g}/s"
    return f"{load} ctl" if s.control else load


def _gpu(s: LoadStep) -> str:
    if not s.gpus:
        return "-"
    g = max(s.gpus, key=lambda x: x.sm_active_pct or x.util_pct or 0)
    act = (
        f"SM {g.sm_active_pct:.0f}%"
        if g.sm_active_pct is not None
        else (f"util {g.util_pct:.0f}%" if g.util_pct is not None else "")
    )
    vram = f" {100 * g.used_max_bytes / g.total_bytes:.0f}% VRAM" if g.used_max_bytes and g.total_bytes else ""
    return (act + vram).strip() or "-"


def _server(s: LoadStep) -> str:
    v = s.server
    if v is None or v.source == "unknown":
        return "-"
    parts = []
    if v.kv_cache_usage_max_pct is not None:
        parts.append(f"KV {v.kv_cache_usage_max_pct:.0f}%")
    if v.running_max is not None:
        parts.append(f"run {v.running_max:g}")
    if v.waiting_max:
        parts.append(f"wait {v.waiting_max:g}")
    if v.preemptions:
        parts.append(f"preempt {v.preemptions:g}")
    return " ".join(parts) or "-"


def _groups(r: LoadReport) -> list[list[Column]]:
    """The steps' columns in groups that stay together (a percentile beside its p50), first the load's."""
    groups: list[list[Column]] = [
        [
            ("load", _load),
            ("ok", lambda s: str(s.ok)),
            ("err", lambda s: str(sum(s.errors.values())) if s.errors else ""),
            ("req/s", lambda s: f"{s.requests_per_s:.2f}"),
            ("tok/s", lambda s: f"{s.output_tokens_per_s:,.0f}"),
        ]
    ]
    if r.meta.slo is not None:
        groups.append(
            [
                ("good/s", lambda s: f"{s.goodput_per_s:.2f}" if s.goodput_per_s is not None else "-"),
                ("SLO", lambda s: "yes" if s.meets_slo else "no"),
            ]
        )
    groups += [
        [("TTFT p50", lambda s: _ms(s.ttft.p50_ms)), ("p99", lambda s: _ms(s.ttft.p99_ms))],
        [("ITL p50", lambda s: _ms(s.itl.p50_ms)), ("p99", lambda s: _ms(s.itl.p99_ms))],
        [("TPOT", lambda s: _ms(s.tpot.p50_ms))],
        [("E2E p99", lambda s: _ms(s.e2e.p99_ms))],
    ]
    if any(s.gpus for s in r.steps):
        groups.append([("GPU", _gpu)])
    if any(s.server and s.server.source != "unknown" for s in r.steps):
        groups.append([("server", _server)])
    if any(s.server_process is not None and s.machine_cpu_pct is not None for s in r.steps):
        groups.append([("host CPU", lambda s: f"{s.machine_cpu_pct:.0f}%" if s.machine_cpu_pct is not None else "-")])
    return groups


def _width(columns: list[Column], steps: list[LoadStep]) -> int:
    widths = [max([len(h)] + [len(f(s)) for s in steps]) for h, f in columns]
    return sum(widths) + GAP * (len(widths) - 1)


def tables(r: LoadReport, width: int) -> list[Table]:
    """The steps' table, split where it would not fit `width`: every later one starts with the load again."""
    groups = _groups(r)
    key = groups[0][:1]
    out: list[list[Column]] = [list(groups[0])]
    for g in groups[1:]:
        if _width(out[-1] + g, r.steps) > width and len(out[-1]) > len(key):
            out.append(key + g)
        else:
            out[-1] += g
    made = []
    for columns in out:
        t = Table(box=None, header_style="bold", pad_edge=False)
        for h, _f in columns:
            t.add_column(
                h,
                justify="left" if h in ("GPU", "server", "SLO") else "right",
                no_wrap=h not in ("GPU", "server"),
                overflow="fold",
            )
        for s in r.steps:
            t.add_row(*(f(s) for _h, f in columns))
        made.append(t)
    return made


def curve(steps: list[LoadStep], width: int = 56, height: int = 12) -> list[str]:
    """Latency (TTFT p90) against output tokens/s: each step a mark (its load's first character), a line per row."""
    pts = [(s.output_tokens_per_s, s.ttft.p90_ms, _load(s)) for s in steps if s.ttft.p90_ms is not None]
    if len(pts) < 2:
        return []
    xmax = max(p[0] for p in pts) or 1.0
    ymax = max(p[1] for p in pts if p[1] is not None) or 1.0
    grid = [[" "] * width for _ in range(height)]
    for x, y, label in pts:
        col = min(width - len(label), int(x / xmax * (width - 1)))
        row = height - 1 - min(height - 1, int((y or 0) / ymax * (height - 1)))
        # two marks on one spot: this one moves right past the other, with a space between (never merged)
        while col + len(label) < width and any(c != " " for c in grid[row][max(0, col - 1) : col + len(label) + 1]):
            col += 1
        for i, ch in enumerate(label):
            grid[row][col + i] = ch
    lines = [f"{_ms(ymax):>7} ┤" + "".join(grid[0]).rstrip()]
    lines += [("        │" + "".join(r)).rstrip() for r in grid[1:-1]]
    lines.append(f"{'0':>7} ┼" + "".join(grid[-1]).rstrip())
    lines.append(f"{'':8}0{'':{max(1, width - 12)}}{xmax:,.0f} tok/s")
    return lines


def knee_text(k: Knee) -> Text:
    """`knee: concurrency 4  (why)`, or `no knee within the sweep: why`."""
    at = (
        f"concurrency {k.concurrency}"
        if k.concurrency is not None
        else f"{k.rate_per_s:g} requests/s"
        if k.rate_per_s is not None
        else None
    )
    if at is None:
        out = Text("\nno knee within the sweep: ", style="bold")
        out.append(k.why)
        return out
    out = Text("\nknee: ", style="bold")
    out.append(at, style="bold magenta")
    out.append(f"  ({k.why})", style="dim")
    return out


def render(r: LoadReport, console: Console) -> None:
    m = r.meta
    head = Text("gputriage load", style="bold")
    if r.id is not None:
        head.append(f" #{r.id}")
    head.append(f"  {safe_text(m.url + m.endpoint, NAME_CHARS)}  {safe_text(m.model, NAME_CHARS)}\n", style="")
    shape = "concurrency sweep" if m.shape == "sweep" else f"request rates, burstiness {m.burstiness:g}"
    prompt = (
        f"prompts from {m.prompts_file}"
        if m.prompts_file
        else f"~{m.input_tokens} input tokens"
        + (f" ({m.long_prompt_share:.0%} x{m.long_prompt_factor:g} long)" if m.long_prompt_share else "")
    )
    head.append(
        f"{shape}; {prompt}, {m.output_tokens} output tokens; {m.requests_per_step} requests or "
        f"{m.seconds_per_step:g} s a step after {m.warmup_requests} warm-up",
        style="dim",
    )
    console.print(head)
    for n in r.notes:
        console.print(Text(n, style="yellow"))
    for i, t in enumerate(tables(r, console.width)):
        if i:
            console.print()
        console.print(t)
    console.print(
        Text(
            "latencies in ms (p50, p99); TPOT p50; tok/s: output tokens"
            + ("; ctl: the step again, every prompt at the normal length" * any(s.control for s in r.steps))
            + (
                "; host CPU: this machine's, all cores"
                * any(s.machine_cpu_pct is not None and s.server_process is not None for s in r.steps)
            ),
            style="dim",
        )
    )
    lines = curve([s for s in r.steps if not s.control], width=max(20, min(56, console.width - 12)))
    if lines:
        console.print(Text("\nTTFT p90 against output tokens/s (each step marked by its load)", style="bold"))
        for line in lines:
            console.print(Text(line, style="cyan"))
    if r.knee is not None:
        console.print(knee_text(r.knee))
    cpu = [s.client_cpu_ms_per_1k_tokens for s in r.steps if s.client_cpu_ms_per_1k_tokens is not None]
    if cpu:
        console.print(
            Text(f"the generator's own CPU: {min(cpu):.1f}–{max(cpu):.1f} ms per 1,000 streamed tokens", style="dim")
        )
    if r.findings:
        console.print()
    for f in r.findings:
        console.print(finding_text(f))
    if not r.findings:
        console.print(Text("\nno finding about this server under this load", style="green"))
