"""A profiler trace in the HTML report: the verdict, each rank's time anatomy (where the window's time
went, busy and idle), its steps as bars, the kernel table, the ranks side by side, the findings."""

from __future__ import annotations

from gputriage.model.trace import Anatomy, KernelRow, RankAnalysis, TraceReport, rate_unit
from gputriage.report.html_page import Page, Raw, bar, esc, findings_html, kv, stack, table
from gputriage.report.kernel_names import SHORT_KIND, short_name
from gputriage.report.style import plural
from gputriage.report.trace_terminal import compiled_line

BUSY_COLORS = ("#2e6fc7", "#3b9d5d", "#8d4fc4", "#17a2b8", "#2c3e94", "#5aa469", "#b07cc6")
IDLE_COLORS = ("#d9822b", "#c0392b", "#e0b13a", "#b5651d", "#e8a3a3", "#95a5a6", "#7f6a4f")


def anatomy_html(page: Page, a: Anatomy, sync: str) -> str:
    """Where the window's time went on one GPU, its steps, its syncs and the host's work it waited on."""
    busy = sorted(a.busy.items(), key=lambda kv: -kv[1].us)
    idle = sorted(a.idle.items(), key=lambda kv: -kv[1].us)
    parts = [(f"busy: {k}", v.pct, BUSY_COLORS[i % len(BUSY_COLORS)]) for i, (k, v) in enumerate(busy)]
    parts += [(f"idle: {k}", v.pct, IDLE_COLORS[i % len(IDLE_COLORS)]) for i, (k, v) in enumerate(idle)]
    out = [
        f"<h3>GPU {a.device}: {a.window_us / 1000:,.1f} ms window, busy {a.busy_pct:.0f}%</h3>",
        f'<div data-anatomy="{a.device}">{stack(parts)}</div>',
        f'<p class="muted">{plural(a.kernels, "kernel")}, median {a.median_kernel_us} µs; '
        f"{plural(a.gaps, 'idle gap')}, median "
        f"{a.median_gap_us} µs; {a.underfilled_busy_pct}% of busy time in kernels whose blocks cover under half "
        "the SMs.</p>",
    ]
    if a.allocator_calls:
        out.append(
            '<p class="muted">Caching allocator: '
            + esc(", ".join(f"{n:,} {call}" for call, n in a.allocator_calls.items()))
            + " calls in the window.</p>"
        )
    if a.steps:
        x = list(range(len(a.steps)))
        out.append(
            page.chart(
                f"GPU {a.device}: each profiler step",
                x,
                [
                    {
                        "label": "step (ms)",
                        "values": [round(s.dur_us / 1000, 3) for s in a.steps],
                        "scale": "ms",
                        "unit": " ms",
                        "color": "#3b7dd8",
                    },
                    {
                        "label": "GPU busy (%)",
                        "values": [round(s.gpu_busy_pct, 1) for s in a.steps],
                        "scale": "pct",
                        "unit": "%",
                        "color": "#c0392b",
                        "line": True,
                    },
                ],
                axes=[
                    {"scale": "ms", "label": "ms", "side": "left", "zero": True},
                    {"scale": "pct", "label": "GPU busy %", "side": "right", "range": [0, 100]},
                ],
                x_label="step",
                kind="bars",
                sync=sync,
                height=200,
            )
        )
    s = a.syncs
    if s.count:
        out.append(f"<p>{s.count} host synchronizations blocked the host {s.host_blocked_us / 1000:,.1f} ms.</p>")
        out.append(
            table(
                ("op", "calls", "host blocked (ms)", "GPU idle after (ms)"),
                (
                    (x.op, x.calls, f"{x.host_blocked_us / 1000:,.2f}", f"{x.gpu_idle_after_us / 1000:,.2f}")
                    for x in s.by_op[:8]
                ),
                numeric=(1, 2, 3),
            )
        )
    if a.host_work:
        out.append("<p>The host computed while the GPU waited:</p>")
        out.append(
            table(
                ("op", "where", "gaps", "GPU idle (ms)"),
                (
                    (
                        h.op,
                        "after a read" if h.where == "after_read" else "inside the op",
                        h.gaps,
                        f"{h.gpu_idle_us / 1000:,.1f}",
                    )
                    for h in a.host_work[:8]
                ),
                numeric=(2, 3),
            )
        )
    return "".join(out)


def _rate(k: KernelRow) -> str:
    if k.achieved_tflops and k.kind.startswith("gemm"):
        return f"{k.achieved_tflops:.0f} {rate_unit(k.dtype or '')}"
    if k.achieved_gbs:
        return f"{k.achieved_gbs:,.0f} GB/s"
    return f"{k.achieved_tflops:.1f} TFLOP/s" if k.achieved_tflops else ""


def kernels_html(kernels: list[KernelRow], top: int = 20) -> str:
    rows = [
        (
            Raw(f'<span title="{esc(k.name)}">{esc(short_name(k.name))}</span>'),
            SHORT_KIND.get(k.kind, k.kind),
            "yes" if k.tensor_cores else "",
            k.count,
            f"{k.total_us / 1000:,.1f}",
            f"{k.pct_of_kernel_time:.1f}",
            bar(k.pct_of_kernel_time),
            f"{k.median_us:,.1f}",
            _rate(k),
            k.roof or "",
        )
        for k in kernels[:top]
    ]
    more = f'<p class="muted">{len(kernels) - top} more kernels not shown.</p>' if len(kernels) > top else ""
    return (
        table(
            ("kernel", "kind", "tensor cores", "calls", "ms", "% of kernel time", "", "median µs", "rate", "roof"),
            rows,
            numeric=(3, 4, 5, 7, 8),
        )
        + more
    )


def rank_html(page: Page, r: RankAnalysis, n: int) -> str:
    who = f"rank {r.rank}" if r.rank is not None else r.file
    head = kv(
        (
            ("file", r.file),
            ("GPU", r.gpu),
            ("datasheet", r.spec),
            ("events", f"{r.events:,}"),
            ("size", f"{r.file_bytes / 1e6:,.1f} MB"),
            ("profiler steps", r.step_count or None),
            ("read in", f"{r.analysis_s:.2f} s on {r.readers} process{'es' if r.readers != 1 else ''}"),
        )
    )
    notes = "".join(f'<p class="muted">note: {esc(p)}</p>' for p in r.problems)
    body = [f"<h3>{esc(who)}</h3>" if n > 1 else "", head, notes]
    body += [anatomy_html(page, a, f"trace{n}") for a in r.anatomy]
    if r.overlap:
        body.append(
            f"<p>Communication: {r.overlap.comm_us / 1000:,.1f} ms of collectives, "
            f"{r.overlap.overlapped_pct:.0f}% of it overlapped by computation.</p>"
        )
    if r.compiled:
        body.append(f"<p>{esc(compiled_line(r.compiled))}.</p>")
    if r.kernels:
        body.append("<h3>Kernels</h3>" + kernels_html(r.kernels))
    return "".join(body)


def verdict_html(t: TraceReport) -> str:
    v = t.verdict
    if v.bottleneck is None:
        return '<p class="big">no verdict</p><p class="muted">The trace holds too little to decide.</p>'
    ranks = f"; {v.ranks_agreeing} of {v.ranks} ranks agree" if v.ranks else ""
    basis = f"; from {v.basis}" if v.basis else ""
    guess = (
        '<p class="muted" data-tentative="true">Tentative: the window holds too little to be sure (confidence '
        f"{v.confidence:.2f}); profile the steady state for longer.</p>"
        if v.tentative
        else ""
    )
    return (
        f'<p class="big" data-bottleneck="{esc(v.bottleneck.value)}">{esc(v.bottleneck.value)}'
        f"{' (tentative)' if v.tentative else ''}</p>"
        + guess
        + f'<p class="why">{v.share_pct:.0f}% of the profiled window; GPU idle {v.gpu_idle_pct:.0f}%; '
        f"confidence {v.confidence:.2f}{esc(ranks)}{esc(basis)}</p>"
        + (f'<p class="decision">Do: {esc(v.decision)}</p>' if v.decision else "")
    )


def add_trace(page: Page, t: TraceReport, heading_prefix: str = "") -> None:
    """The trace's sections, appended to a page (its own, or a profiled run's)."""
    page.section(f"{heading_prefix}Verdict", verdict_html(t), "verdict")
    if t.findings:
        page.section(f"{heading_prefix}Findings", findings_html(t.findings))
    mr = t.multi_rank
    if mr and mr.per_rank:
        rows = [
            (
                x.rank if x.rank is not None else x.file,
                x.bottleneck.value if x.bottleneck else "no verdict",
                f"{x.busy_pct:.0f}" if x.busy_pct is not None else "-",
                bar(x.busy_pct),
                f"{x.median_step_us / 1000:,.2f}" if x.median_step_us else "-",
                f"{x.comm_overlapped_pct:.0f}" if x.comm_overlapped_pct is not None else "-",
            )
            for x in mr.per_rank
        ]
        page.section(
            f"{heading_prefix}Ranks",
            table(
                ("rank", "verdict", "busy %", "", "median step ms", "communication overlapped %"),
                rows,
                numeric=(2, 4, 5),
            )
            + f'<p class="muted">Stragglers: {esc(", ".join(map(str, mr.stragglers)) or "none")}; '
            f"busy spread {esc(mr.busy_pct_spread)} points.</p>",
        )
    for i, r in enumerate(t.ranks):
        page.section(
            f"{heading_prefix}Time anatomy" + (f" (rank {r.rank})" if len(t.ranks) > 1 else ""),
            rank_html(page, r, i + 1),
        )
    if t.problems:
        page.section("Not read", "".join(f"<p>{esc(p)}</p>" for p in t.problems))


def trace_page(t: TraceReport) -> Page:
    names = ", ".join(t.files[:3]) + (f" and {len(t.files) - 3} more" if len(t.files) > 3 else "")
    gpu = next((r.gpu for r in t.ranks if r.gpu), None)
    page = Page(f"Trace: {names}", " · ".join(x for x in (gpu, f"{len(t.ranks)} rank(s)") if x))
    add_trace(page, t)
    return page
