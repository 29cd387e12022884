"""`fleet check` in the terminal: a row per node; the fleet's findings (the nodes below the fleet, the drift, the
nodes that failed, GPUs their driver does not see); the nodes' own findings by id; the idle share and its cost."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gputriage.model.fleet import FleetReport, NodeResult
from gputriage.model.safe_text import NAME_CHARS, safe_text
from gputriage.report.style import finding_text, plural


def _g(v: float | None, fmt: str = "{:g}") -> str:
    return "-" if v is None else fmt.format(v)


def _name(n: NodeResult) -> str:
    name = n.name or (n.figures.hostname if n.figures else "") or n.hostname or n.address or n.short_id
    return safe_text(name, NAME_CHARS)  # what a node says of itself is printed bounded, without control characters


def gpus_cell(n: NodeResult) -> str:
    """The node's GPUs as its driver lists them, and those Ray counts that the driver does not see."""
    f = n.figures
    seen = f"{f.gpus} x {safe_text(f.gpu_name or '?', NAME_CHARS)}" if f is not None and f.gpus else ""
    if n.gpus_not_visible:
        gone = f"{n.gpus_not_visible} GPU{'s' if n.gpus_not_visible != 1 else ''} not visible to the driver"
        return f"{seen}, {gone}" if seen else gone
    return seen or "none"


def _row(n: NodeResult) -> list[str]:
    f = n.figures
    if not n.ok or f is None:
        return [_name(n), f"failed: {safe_text(n.error)}" if n.error else "failed", "", "", "", "", "", "", ""]
    link = f"G{_g(f.pcie_gen)} x{_g(f.pcie_width)}" if f.pcie_gen is not None else "-"
    bench = (
        f"{_g(f.bf16_tflops, '{:.0f}')} TF {_g(f.memory_gbs, '{:.0f}')} GB/s"
        if f.bf16_tflops is not None or f.memory_gbs is not None
        else ""
    )
    return [
        _name(n),
        gpus_cell(n),
        safe_text(f.driver or "-", NAME_CHARS),
        link,
        _g(f.sm_clock_max_mhz, "{:.0f}"),
        _g(f.power_limit_w, "{:.0f}"),
        _g(f.sm_active_pct if f.sm_active_pct is not None else f.util_pct, "{:.0f}%"),
        bench,
        str(len(n.findings)),
    ]


def render(r: FleetReport, console: Console) -> None:
    ok = sum(1 for n in r.nodes if n.ok)
    head = Text("gputriage fleet", style="bold")
    head.append(
        f"  {r.address}  {ok} of {len(r.nodes)} nodes answered" + (" (with bench --quick)" if r.bench else ""),
        style="dim",
    )
    console.print(head)
    for note in r.notes:
        console.print(Text(note, style="yellow"))
    t = Table(box=None, header_style="bold", pad_edge=False, collapse_padding=True)
    names = [_name(n) for n in r.nodes]
    for c in ("node", "GPUs", "driver", "PCIe", "SM max", "W", "busy", "bench", "findings"):
        # at 80 columns the names, GPUs and bench figures wrap; the short figures never do
        wraps = c in ("node", "GPUs", "bench")
        t.add_column(
            c,
            no_wrap=not wraps,
            overflow="fold",
            min_width=min(12, max(map(len, names), default=4)) if c == "node" else 7 if wraps else len(c),
        )
    for n in r.nodes:
        t.add_row(*_row(n), style="red" if not n.ok or n.gpus_not_visible else "")
    console.print(t)
    if r.findings:
        console.print(Text("\nthe fleet, its nodes set against each other:", style="bold"))
        for f in r.findings:
            console.print(finding_text(f))
    if r.findings_by_id:
        console.print(Text("\nthe nodes' own findings (`gputriage rules ID`):", style="bold"))
        for fid, nodes in r.findings_by_id.items():
            console.print(Text(f"  {fid}: {safe_text(', '.join(nodes))}"))
    w = r.waste
    if w is not None:
        line = Text(
            f"\nidle at the check: {100 - w.busy_pct:.0f}% of {plural(w.gpus, 'GPU')} by {w.measure} = "
            f"{w.idle_gpu_equivalents:g} GPUs' worth",
            style="bold",
        )
        if w.not_visible:
            line.append(f" ({w.not_visible} not visible to the driver, counted idle)")
        if w.idle_cost_per_hour is not None:
            line.append(
                f", {w.idle_cost_per_hour:,.2f} {w.currency}/hour at {w.price_per_gpu_hour:g} {w.currency}/GPU-hour"
            )
        console.print(line)
        console.print(Text(f"  ({w.note})", style="dim"))
