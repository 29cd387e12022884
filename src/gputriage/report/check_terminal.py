"""`check` in the terminal: per-GPU summary, then findings grouped by the five triage steps."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gputriage.model.check import CheckReport
from gputriage.model.finding import STEPS, Severity
from gputriage.model.reading import Unavailable
from gputriage.report.holders_terminal import SM_HELP, check_processes
from gputriage.report.libraries import libraries_said
from gputriage.report.style import SEVERITY_STYLE, finding_text, indented, local_time, show

MEANING = {
    "util.gpu_pct": "nvidia-smi GPU-Util: share of time at least one kernel ran; 100% can mean one SM busy",
    "util.memory_pct": "nvidia-smi memory util: share of time device memory was read or written, not bandwidth",
    "gpm.sm_active_pct": "SM activity: share of SMs x time with a warp resident; the real 'how busy'",
    "gpm.sm_occupancy_pct": "SM occupancy: resident warps / max warps; low with high activity is fine for GEMMs",
    "gpm.tensor_active_pct": "tensor-pipe activity: share of time tensor cores worked; ~0 means CUDA-core math",
    "gpm.dram_bw_util_pct": "DRAM bandwidth: share of peak HBM/GDDR bandwidth in use; high means memory-bound",
}


class Facts:
    """The report's facts by name: the value, or `Unavailable` (missing, or unavailable when read)."""

    def __init__(self, report: CheckReport) -> None:
        self.facts = report.facts
        self.hostname, self.taken_at = report.hostname, report.taken_at

    def get(self, name: str) -> Any:
        if name not in self.facts:
            return Unavailable("not_found", name)
        value = self.facts[name]
        if isinstance(value, dict) and set(value) == {"unavailable"}:
            u = value["unavailable"]
            return Unavailable(u.get("reason", "error"), u.get("detail", ""))
        return value


WIDE = 110  # a terminal this wide gets one table row per GPU; narrower ones a block per GPU


def gpu_cells(snap: Facts, i: int) -> dict[str, str]:
    def g(k: str) -> Any:
        return snap.get(f"gpu.{i}.{k}")

    used, total = g("memory.used_bytes"), g("memory.total_bytes")
    draw, limit = g("power.draw_mw"), g("power.limit_enforced_mw")
    clk, clkmax = g("clock.sm_mhz"), g("clock.sm_max_mhz")
    gen, width = g("pcie.link_gen.loaded"), g("pcie.link_width.loaded")
    suffix = ""
    if isinstance(gen, Unavailable):
        gen, width, suffix = g("pcie.link_gen.current"), g("pcie.link_width.current"), " idle"
    return {
        "name": show(g("name")),
        "vram": f"{used / 2**30:.1f}/{total / 2**30:.0f}G"
        if isinstance(used, int) and isinstance(total, int)
        else "n/a",
        "util": show(g("util.gpu_pct"), "%"),
        "sm": show(g("gpm.sm_active_pct"), "%", 1),
        "occup": show(g("gpm.sm_occupancy_pct"), "%", 1),
        "tensor": show(g("gpm.tensor_active_pct"), "%", 1),
        "dram": show(g("gpm.dram_bw_util_pct"), "%", 1),
        "power": f"{draw / 1000:.0f}/{limit / 1000:.0f}W"
        if isinstance(draw, int) and isinstance(limit, int)
        else "n/a",
        "temp": show(g("temperature_c"), "C"),
        "clock": f"{show(clk)}/{show(clkmax)}" if not isinstance(clk, Unavailable) else "n/a",
        "pcie": f"G{show(gen)} x{show(width)}{suffix}" if not isinstance(gen, Unavailable) else "n/a",
    }


def _gpu_table(snap: Facts, width: int) -> Table | None:
    count = snap.get("gpu.count")
    if not isinstance(count, int) or count == 0:
        return None
    if width < WIDE:
        t = Table.grid(padding=(0, 2))
        t.add_column(no_wrap=True)
        t.add_column(overflow="fold")
        for i in range(count):
            c = gpu_cells(snap, i)
            t.add_row(
                Text(f"GPU {i}", style="bold"),
                Text(
                    f"{c['name']}  VRAM {c['vram']}  {c['power']}  {c['temp']}  SM {c['clock']} MHz  PCIe {c['pcie']}"
                ),
            )
            t.add_row(
                "", f"util {c['util']}  SM act {c['sm']}  occup {c['occup']}  tensor {c['tensor']}  DRAM {c['dram']}"
            )
        return t
    t = Table(box=None, header_style="bold", pad_edge=False, show_edge=False)
    cols = {
        "GPU": None,
        "name": "name",
        "VRAM used": "vram",
        "util": "util",
        "SM act": "sm",
        "occup": "occup",
        "tensor": "tensor",
        "DRAM": "dram",
        "power": "power",
        "temp": "temp",
        "SM clock": "clock",
        "PCIe": "pcie",
    }
    for col in cols:
        t.add_column(col, justify="left" if col == "name" else "right", no_wrap=True)
    for i in range(count):
        c = gpu_cells(snap, i)
        t.add_row(str(i), *(c[k] for k in list(cols.values())[1:] if k))
    return t


def _header(snap: Facts) -> Text:
    when = local_time(snap.taken_at)
    driver = snap.get("driver.version")
    cuda = snap.get("driver.cuda_version")
    torch = snap.get("torch.version")
    h = Text()
    h.append("gputriage check", style="bold")
    h.append(f"  {snap.hostname}  {when}\n", style="dim")
    nvml = snap.get("driver.nvml")
    if isinstance(nvml, Unavailable):
        h.append(f"NVIDIA driver: {nvml}\n", style="red")
    else:
        h.append(f"driver {driver}  CUDA {show(cuda)}  ")
        h.append(f"torch {torch if not isinstance(torch, Unavailable) else 'not installed'}", style="")
        build = snap.get("torch.cuda.build_version")
        if not isinstance(build, Unavailable) and build:
            h.append(f", built for CUDA {build}")
        h.append("\n")
    libraries = snap.get("python.gpu_libraries")
    if isinstance(libraries, dict) and libraries:
        h.append(f"beside torch: {libraries_said(libraries)}\n", style="dim")
    return h


def render(report: CheckReport, console: Console, verbose: bool = False) -> None:
    snap = Facts(report)
    findings = report.findings
    console.print(_header(snap))
    table = _gpu_table(snap, console.width)
    if table is not None:
        console.print(table)
        if any(
            not isinstance(snap.get(f"gpu.{i}.gpm.sm_active_pct"), Unavailable)
            for i in range(snap.get("gpu.count") or 0)
        ):
            window = snap.get("gpu.0.gpm.window_ms")
            console.print(
                indented(
                    f"GPM window {show(window)} ms. "
                    + "; ".join(
                        f"{k.split('.')[-1].replace('_pct', '')}: {v.split(': ', 1)[1]}"
                        for k, v in MEANING.items()
                        if k.startswith("gpm")
                    )
                    + ". util = "
                    + MEANING["util.gpu_pct"].split(": ", 1)[1]
                    + ".",
                    style="dim",
                )
            )
        console.print()
    count = snap.get("gpu.count")
    holders = (
        check_processes({i: snap.get(f"gpu.{i}.processes") for i in range(count)}) if isinstance(count, int) else None
    )
    if holders is not None:
        console.print(holders)
        console.print(indented(f"{SM_HELP} over the last seconds the driver keeps", style="dim"))
        console.print()
    seq, rnd = snap.get("host.fs.cwd.seq_read_mbps"), snap.get("host.fs.cwd.rand_read_4k_iops")
    if not isinstance(seq, Unavailable) or not isinstance(rnd, Unavailable):
        console.print(
            Text(
                f"disk where you run (check --full): sequential read {show(seq, ' MB/s')}, 4 KiB random "
                f"read {show(rnd, ' IOPS')}",
                style="dim",
            )
        )
        console.print()
    shown = findings if verbose else [f for f in findings if f.severity >= Severity.info]
    for step, title in STEPS.items():
        in_step = [f for f in shown if f.step == step]
        head = Text()
        head.append(f"{step}. {title}", style="bold underline")
        if not in_step:
            head.append("  nothing found", style="green")
        console.print(head)
        for f in in_step:
            console.print(finding_text(f))
        console.print()
    counts = report.summary.counts
    tail = Text()
    for sev in (Severity.critical, Severity.warn, Severity.info):
        n = counts[sev.value]
        tail.append(f"{n} {sev.value}  ", style=SEVERITY_STYLE[sev] if n else "dim")
    console.print(tail)
