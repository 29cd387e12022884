"""A distributed job's ranks in the terminal (`run` of a launcher, `gputriage join`): a row per rank — its step
time, its main thread's time waiting in collectives, for input, computing on the host and waiting for a CPU, its
process's CPU and cores, its GPU — the straggler the others wait for, and the hangs said while the job ran."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gputriage.model.ranks import JoinReport, RankGpu, RanksReport, RankSummary
from gputriage.report.style import finding_text, local_time

# the main thread's shares shown, by column: (header, the stack sampler's categories summed)
SHARES = (
    ("coll wait", ("collective_wait",)),
    ("input", ("input_wait",)),
    ("host", ("host_compute", "gc", "compile", "launch")),
    ("runq", ("runq",)),
)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _ms(us: float | None) -> str:
    return "-" if us is None else f"{us / 1000:.1f}"


def gpu_text(g: RankGpu | None) -> str:
    """A rank's GPU in a cell: its index, SM activity (else GPU-Util), clock, slowdowns, link."""
    if g is None:
        return "-"
    parts = [f"GPU {g.index}"]
    if g.sm_active_pct is not None:
        parts.append(f"SM {g.sm_active_pct:.0f}%")
    elif g.util_pct is not None:
        parts.append(f"util {g.util_pct:.0f}%")
    if g.sm_clock_mhz is not None:
        parts.append(f"{g.sm_clock_mhz:.0f} MHz")
    for name, share in (("thermal", g.throttled_share), ("power cap", g.power_capped_share)):
        if share:
            parts.append(f"{name} {share:.0%}")
    if g.pcie_gen and g.pcie_width:
        parts.append(f"gen{g.pcie_gen} x{g.pcie_width}")
    return " ".join(parts)


def _row(r: RankSummary, nodes: bool, straggler: int | None) -> list[str | Text]:
    shares = [_pct(sum(r.shares.get(c, 0.0) for c in cats) if r.shares else None) for _, cats in SHARES]
    rank = Text(str(r.rank), style="bold red" if r.rank == straggler else "")
    cells: list[str | Text] = [rank] + ([r.node] if nodes else [])
    cells += [f"{_ms(r.median_step_us)} / {_ms(r.p90_step_us)}", *shares]
    cells += [f"{r.cpu_pct:.0f}%" if r.cpu_pct is not None else "-", r.cores or "all", gpu_text(r.gpu)]
    cells.append(f"{r.score:.2f}" if r.score is not None else "-")
    return cells


def table(ranks: RanksReport) -> Table:
    nodes = len(ranks.nodes) > 1
    t = Table(box=None, header_style="bold", pad_edge=False)
    heads = ["rank", *(["node"] if nodes else []), "step ms p50/p90", *(h for h, _ in SHARES), "CPU", "cores"]
    for h in [*heads, "GPU", "score"]:
        t.add_column(h, no_wrap=True, justify="left" if h in ("node", "cores", "GPU") else "right")
    s = ranks.straggler.rank if ranks.straggler is not None else None
    for r in ranks.per_rank:
        t.add_row(*_row(r, nodes, s))
    return t


def render_ranks(ranks: RanksReport | None, console: Console) -> None:
    """The ranks side by side, the straggler and the hangs (nothing for a job of no rank)."""
    if ranks is None or not ranks.per_rank:
        return
    job = f" of job {ranks.job_id}" if ranks.job_id else ""
    where = f" on {len(ranks.nodes)} nodes" if len(ranks.nodes) > 1 else ""
    console.print(
        Text(
            f"\n{len(ranks.per_rank)} ranks{job}{where} (main thread's time; score: time outside "
            "collective waits against the best rank's)",
            style="bold",
        )
    )
    console.print(table(ranks))
    s = ranks.straggler
    if s is not None:
        kind = (
            f"chronic, slow in {s.slow_windows} of {s.windows} rounds"
            if s.chronic
            else (f"one-off, stalled in {s.slow_windows} of {s.windows} rounds")
        )
        console.print(
            Text(
                f"straggler: rank {s.rank} ({s.score:.2f}x rank {s.best_rank}'s time outside collectives, {kind}); "
                f"the others wait for it in collectives {s.others_collective_wait_share:.0%} of their time",
                style="yellow",
            )
        )
    elif len(ranks.per_rank) > 1:
        console.print(Text("no straggler: no rank held the others back", style="green"))
    for note in ranks.notes:
        console.print(Text(note, style="dim"))
    for h in ranks.hangs:
        missing = ", ".join(map(str, h.missing)) or "none (every rank waited)"
        console.print(
            Text(
                f"hang at {local_time(h.t_s, '%H:%M:%S')}: rank{'s' if len(h.waiting) > 1 else ''} "
                f"{', '.join(map(str, h.waiting))} waited "
                f"{h.waited_s:.0f} s in a collective; missing: {missing}",
                style="bold red",
            )
        )
        for k, frames in h.stacks.items():
            console.print(Text(f"  rank {k}: " + (" <- ".join(frames[:4]) or "no stack"), style="dim"))


def render_join(report: JoinReport, console: Console) -> None:
    """A job joined from its nodes' records: where from, its ranks, its findings."""
    console.print(Text(f"job {report.job_id or '(no id)'}: {len(report.sources)} records joined", style="bold"))
    for src in report.sources:
        console.print(Text(f"  {src}", style="dim"))
    for note in report.notes:
        console.print(Text(note, style="yellow"))
    render_ranks(report.ranks, console)
    if report.findings:
        console.print()
    for f in report.findings:
        console.print(finding_text(f, why=False))
