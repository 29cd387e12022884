"""A check (or a checklist) in the HTML report: the GPUs at a glance, the findings by triage step with
their decisions, every fact read (folded)."""

from __future__ import annotations

from gputriage.model.check import CheckReport
from gputriage.model.checklist import ChecklistReport
from gputriage.model.finding import STEPS, Severity
from gputriage.model.reading import Unavailable
from gputriage.report.check_terminal import Facts, gpu_cells
from gputriage.report.html_page import Page, Raw, badge, findings_html, kv, table, when
from gputriage.report.libraries import libraries_said

GPU_COLUMNS = (
    ("name", "name"),
    ("VRAM used", "vram"),
    ("util", "util"),
    ("SM act", "sm"),
    ("occup", "occup"),
    ("tensor", "tensor"),
    ("DRAM", "dram"),
    ("power", "power"),
    ("temp", "temp"),
    ("SM clock MHz", "clock"),
    ("PCIe", "pcie"),
)


def _shown(v: object) -> str:
    """A fact's value, or why it has none in words ("not installed" only where that is the reason)."""
    if not isinstance(v, Unavailable):
        return str(v)
    if v.reason == "not_installed":
        return "not installed"
    if not v.detail:
        return f"not read ({v.reason})"
    return v.detail if v.detail.startswith("not ") else f"not read: {v.detail}"


def check_page(report: CheckReport, verbose: bool = False) -> Page:
    snap = Facts(report)
    counts = report.summary.counts
    page = Page(
        f"Check: {report.hostname or 'this machine'}",
        f"{when(report.taken_at)} · {counts.get('critical', 0)} critical, {counts.get('warn', 0)} warn, "
        f"{counts.get('info', 0)} info",
    )
    nvml = snap.get("driver.nvml")
    head = kv(
        (
            ("NVIDIA driver", str(nvml) if isinstance(nvml, Unavailable) else _shown(snap.get("driver.version"))),
            ("CUDA (driver)", _shown(snap.get("driver.cuda_version"))),
            ("torch", _shown(snap.get("torch.version"))),
            ("beside torch", _libraries(snap.get("python.gpu_libraries"))),
            ("gputriage", report.tool_version),
        )
    )
    count = snap.get("gpu.count")
    gpus = ""
    if isinstance(count, int) and count:
        rows = [[str(i), *(gpu_cells(snap, i)[k] for _, k in GPU_COLUMNS)] for i in range(count)]
        gpus = table(["GPU", *(h for h, _ in GPU_COLUMNS)], rows, numeric=tuple(range(2, 12)))
    page.section("The machine", head + gpus)
    shown = report.findings if verbose else [f for f in report.findings if f.severity >= Severity.info]
    for step, title in STEPS.items():
        in_step = [f for f in shown if f.step == step]
        page.section(f"{step}. {title}", findings_html(in_step) if in_step else '<p class="better">Nothing found.</p>')
    facts = table(("fact", "value"), ((k, _shown(snap.get(k))) for k in sorted(report.facts)))
    page.section("Every fact read", f"<details><summary>{len(report.facts)} facts</summary>{facts}</details>")
    return page


def checklist_page(report: ChecklistReport) -> Page:
    counts = {s: sum(1 for i in report.items if i.status.value == s) for s in ("pass", "fail", "unknown", "question")}
    page = Page(f"Checklist: {report.kind}", ", ".join(f"{n} {s}" for s, n in counts.items() if n))
    rows = [(Raw(badge(i.status.value)), i.text, i.why, i.decided_by) for i in report.items]
    page.section("Items", table(("", "item", "why", "decided by"), rows))
    return page


def _libraries(value: object) -> str:
    """The GPU libraries beside torch and the training frameworks installed, or "none"."""
    return libraries_said(value) if isinstance(value, dict) and value else "none"
