"""`fleet check` in the terminal: a row per node, the outliers, the drift, the findings by node, the idle
share and its cost."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gputriage.model.fleet import FleetReport, NodeResult


def _g(v: float | None, fmt: str = "{:g}") -> str:
    return "-" if v is None else fmt.format(v)


def _row(n: NodeResult) -> list[str]:
    f = n.figures
    if not n.ok or f is None:
        return [n.address or n.node_id[:12], "failed", n.error or "", "", "", "", "", "", ""]
    link = f"G{_g(f.pcie_gen)} x{_g(f.pcie_width)}" if f.pcie_gen is not None else "-"
    bench = (f"{_g(f.bf16_tflops, '{:.0f}')} TF {_g(f.memory_gbs, '{:.0f}')} GB/s"
             if f.bf16_tflops is not None or f.memory_gbs is not None else "")
    return [f.hostname or n.address, f"{f.gpus} x {f.gpu_name or '?'}", f.driver or "-", link,
            _g(f.sm_clock_max_mhz, "{:.0f}"), _g(f.power_limit_w, "{:.0f}"),
            _g(f.sm_active_pct if f.sm_active_pct is not None else f.util_pct, "{:.0f}%"), bench,
            str(len(n.findings))]


def render(r: FleetReport, console: Console) -> None:
    ok = sum(1 for n in r.nodes if n.ok)
    head = Text("gputriage fleet", style="bold")
    head.append(f"  {r.address}  {ok} of {len(r.nodes)} nodes answered" + (" (with bench --quick)" if r.bench else ""),
                style="dim")
    console.print(head)
    for note in r.notes:
        console.print(Text(note, style="yellow"))
    t = Table(box=None, header_style="bold", pad_edge=False)
    for c in ("node", "GPUs", "driver", "PCIe", "SM max", "W", "busy", "bench", "findings"):
        t.add_column(c, no_wrap=c != "node", overflow="fold")
    for n in r.nodes:
        t.add_row(*_row(n), style="red" if not n.ok else "")
    console.print(t)
    if r.outliers:
        console.print(Text("\nbelow the fleet (more than a robust spread under its median):", style="bold yellow"))
        for o in r.outliers:
            console.print(Text(f"  {o.node}: {o.figure} {o.value:g} {o.unit} against a median of {o.fleet_median:g} "
                               f"(threshold {o.threshold:g})", style="yellow"))
    if r.drift:
        console.print(Text("\ndrift across nodes:", style="bold yellow"))
        for d in r.drift:
            console.print(Text(f"  {d.key}: " + "; ".join(f"{v} on {', '.join(ns)}" for v, ns in d.values.items()),
                               style="yellow"))
    if r.findings_by_id:
        console.print(Text("\nfindings (`gputriage rules ID`):", style="bold"))
        for fid, nodes in r.findings_by_id.items():
            console.print(Text(f"  {fid}: {', '.join(nodes)}"))
    w = r.waste
    if w is not None:
        line = Text(f"\nidle at the check: {100 - w.busy_pct:.0f}% of {w.gpus} GPUs by {w.measure} = "
                    f"{w.idle_gpu_equivalents:g} GPUs' worth", style="bold")
        if w.idle_cost_per_hour is not None:
            line.append(f", {w.idle_cost_per_hour:,.2f} {w.currency}/hour at {w.price_per_gpu_hour:g} "
                        f"{w.currency}/GPU-hour")
        console.print(line)
        console.print(Text(f"  ({w.note})", style="dim"))
