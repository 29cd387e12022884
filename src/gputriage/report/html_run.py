"""A run (or a watch) in the HTML report: the verdict, the findings, each GPU's timeline — GPU-Util, SM
activity, tensor pipes, DRAM, power, SM clock and the workload's CPU on one time axis with its phases
shaded and the profiled windows marked — the throughput, the cost, the host, the profiler's view and the
comparison with a baseline."""

from __future__ import annotations

from typing import Any

from gputriage.inworkload.stack_categories import doing
from gputriage.model.run import GpuVerdict, RunReport
from gputriage.report.html_diff import diff_html
from gputriage.report.html_page import Page, esc, findings_html, kv, table, when
from gputriage.report.html_ranks import ranks_html
from gputriage.report.html_run_memory import add_memory
from gputriage.report.html_trace import add_trace
from gputriage.report.libraries import used_said
from gputriage.report.loader_workers import html as loader_html
from gputriage.report.profile_terminal import cost_line, window_line
from gputriage.report.stack_lines import about, line_text, main_thread, place, thread
from gputriage.report.step_regimes import html as step_regimes_html
from gputriage.report.step_regimes import steady_span

ACTIVITY = (
    ("util_pct", "GPU-Util", "#7f8c8d"),
    ("sm_active_pct", "SM activity", "#3b7dd8"),
    ("tensor_active_pct", "tensor pipes", "#a34bc9"),
    ("dram_active_pct", "DRAM", "#2e8b57"),
    ("power_pct", "power (% of limit)", "#d9822b"),
)
HOST_BOUND_TINT = "rgba(217,130,43,0.13)"
REGIME_TINTS = {
    "compute_bound": "rgba(46,139,87,0.10)",
    "memory_bound": "rgba(46,139,87,0.16)",
    "input_starved": HOST_BOUND_TINT,
    "launch_bound": HOST_BOUND_TINT,
    "sync_bound": HOST_BOUND_TINT,
    "host_bound": HOST_BOUND_TINT,
    "idle": "rgba(127,140,141,0.16)",
    "contended": "rgba(192,57,43,0.12)",
    "throttled": "rgba(192,57,43,0.16)",
    "comm_bound": "rgba(23,162,184,0.14)",
}
EDGE_TINT = "rgba(127,140,141,0.10)"


def _tint(regime: str) -> str:
    return REGIME_TINTS.get(
        regime.split(" ")[0], EDGE_TINT if regime[:5] in ("start", "shut-", "warm-") else "rgba(59,125,216,0.10)"
    )


def _duration(r: RunReport) -> str:
    return f"{r.ended_s - r.started_s:,.1f} s" if r.started_s and r.ended_s else ""


def _verdict(r: RunReport) -> str:
    v = r.verdict
    out = []
    if v.bottleneck is not None:
        out.append(f'<p class="big" data-bottleneck="{esc(v.bottleneck.value)}">{esc(v.bottleneck.value)}</p>')
    else:
        out.append('<p class="big">no verdict</p>')
    m = v.merged
    if m is not None and m.why:
        out.append(f'<p class="why">{esc(m.why)}</p>')
    for key, g in v.per_gpu.items():
        name = (r.meta.gpus[key].name if key in r.meta.gpus else None) or ""
        if g.bottleneck is None:
            out.append(f"<p><b>GPU {esc(key)}</b> {esc(name)}: {esc(g.summary or 'no verdict')}</p>")
            continue
        apart = " / ".join(b.value for b in g.undecided_between)
        undecided = (
            f'<br><span class="muted">The sampler cannot tell {esc(apart)} apart: `gputriage run --profile '
            "-- ...` profiles the steady state and separates them.</span>"
            if g.undecided_between
            else ""
        )
        out.append(
            f"<p><b>GPU {esc(key)}</b> {esc(name)}: <b>{esc(g.bottleneck.value)}</b> "
            f'<span class="muted">{g.share:.0%} of steady time, confidence {g.confidence:.2f}</span><br>'
            f'{esc(g.summary)}{undecided}</p><p class="decision">Do: {esc(g.decision)}</p>'
        )
        if g.impact is not None:
            out.append(f'<p class="impact">Gain: up to {g.impact:.0%} of the GPU\'s time (estimated)</p>')
        if g.verify:
            out.append(f'<p class="verify">Verify: <code>{esc(g.verify)}</code></p>')
        if g.lines:  # where the host's time went, by the workload's Python lines
            out.append('<p class="muted">At: ' + "; ".join(esc(line_text(x, r.meta.cwd)) for x in g.lines[:3]) + "</p>")
    return "".join(out)


def _stacks(r: RunReport) -> str:
    """Where the workload's Python threads spent the steady state (the stack sampler), line by line."""
    s = r.stacks
    assert s is not None
    uses = used_said(s.libraries, r.meta.system.get("gpu_libraries") or {}) if s.libraries else ""
    said = f'<p class="muted">Uses {esc(uses)}</p>' if uses else ""
    return (
        f'<p>The main thread {esc(main_thread(s))} <span class="muted">({esc(about(s))})</span></p>'
        + said
        + table(
            ("share of the steady time", "line", "doing", "thread"),
            ((f"{x.share:.0%}", place(x, r.meta.cwd), doing(x.category), thread(x)) for x in s.lines),
            numeric=(0,),
        )
    )


def _marks(r: RunReport) -> list[dict[str, Any]]:
    p = r.profile
    if p is None or not r.started_s:
        return []
    windows = p.held_all_s or ([p.held_s] if p.held_s else [])
    return [{"x": round(w[0] - r.started_s, 2), "label": "profiled"} for w in windows if w]


def _gpu(page: Page, r: RunReport, key: str, g: GpuVerdict) -> str:
    s = g.series
    if not s.t_s:
        return '<p class="muted">No samples to draw.</p>'
    bands = [{"start": t.start_s, "end": t.end_s, "label": t.regime, "color": _tint(t.regime)} for t in g.timeline]
    activity = [
        {"label": label, "values": getattr(s, k), "scale": "pct", "unit": "%", "color": c}
        for k, label, c in ACTIVITY
        if getattr(s, k)
    ]
    out = [
        page.chart(
            f"GPU {key}: activity",
            s.t_s,
            activity,
            x_label="seconds since start",
            axes=[{"scale": "pct", "label": "%", "side": "left", "range": [0, 100]}],
            bands=bands,
            marks=_marks(r),
            sync=f"run-gpu{key}",
        )
    ]
    clocks = []
    if s.sm_clock_mhz:
        clocks.append(
            {
                "label": "SM clock (MHz, lowest)",
                "values": s.sm_clock_mhz,
                "scale": "mhz",
                "unit": " MHz",
                "color": "#c0392b",
            }
        )
    if s.workload_cpu_pct:
        clocks.append(
            {
                "label": "workload CPU (% of a core)",
                "values": s.workload_cpu_pct,
                "scale": "cpu",
                "unit": "%",
                "color": "#17a2b8",
            }
        )
    if clocks:
        axes = []
        if s.sm_clock_mhz:
            axes.append({"scale": "mhz", "label": "MHz", "side": "left"})
        if s.workload_cpu_pct:
            axes.append({"scale": "cpu", "label": "CPU % of a core", "side": "right" if axes else "left"})
        out.append(
            page.chart(
                f"GPU {key}: SM clock and the workload's CPU",
                s.t_s,
                clocks,
                x_label="seconds since start",
                axes=axes,
                bands=bands,
                sync=f"run-gpu{key}",
                height=180,
            )
        )
    if g.timeline:
        phases = table(
            ("from (s)", "to (s)", "phase", "what it shows", "what to do"),
            ((f"{t.start_s:.0f}", f"{t.end_s:.0f}", t.regime, t.summary, t.decision) for t in g.timeline),
            numeric=(0, 1),
        )
        out.append(
            phases
            if len(g.timeline) <= 12
            else f"<details><summary>{len(g.timeline)} phases</summary>{phases}</details>"
        )
    return "".join(out)


def _rate(v: float | None) -> str:
    return "" if v is None else f"{v:,.1f}" if v < 100 else f"{v:,.0f}"


def _throughput(r: RunReport) -> str:
    t = r.throughput
    assert t is not None
    pairs: list[tuple[str, Any]] = [
        ("steps/s", _rate(t.steps_per_s)),
        ("samples/s", _rate(t.samples_per_s)),
        ("tokens/s", _rate(t.tokens_per_s)),
        ("over", steady_span(t).removeprefix(" over ")),
        ("from", t.source),
    ]
    if t.metric_pattern is not None:
        pairs.append(
            (
                f"lines matching {t.metric_pattern!r}",
                f"median {t.metric_median:,.4g} of {t.metric_lines}"
                if t.metric_median is not None
                else "none in the steady state",
            )
        )
    if t.mfu_pct is not None:
        pairs.append(
            (
                "MFU",
                f"{t.mfu_pct:.1f}%: {t.achieved_tflops:,.1f} TFLOP/s of the model's math against "
                f"{t.peak_tflops:,.0f} ({t.peak_source})",
            )
        )
    if t.mfu_bench_pct is not None:
        pairs.append(
            (
                "MFU, measured ceiling",
                f"{t.mfu_bench_pct:.1f}% against {t.bench_tflops:,.0f} TFLOP/s ({t.bench_source})",
            )
        )
    out = kv(pairs) + step_regimes_html(t)
    if len(t.by_regime) > 1:
        out += table(
            ("from (s)", "to (s)", "phase", "steps/s", "samples/s", "tokens/s", "metric"),
            (
                (
                    f"{p.start_s:.0f}",
                    f"{p.end_s:.0f}",
                    p.regime,
                    _rate(p.steps_per_s),
                    _rate(p.samples_per_s),
                    _rate(p.tokens_per_s),
                    f"{p.metric_median:,.4g}" if p.metric_median is not None else "",
                )
                for p in t.by_regime
            ),
            numeric=(0, 1, 3, 4, 5, 6),
        )
    return out


def _cost(r: RunReport) -> str:
    c = r.cost
    assert c is not None
    gpus = f"{c.gpus} GPU{'s' if c.gpus != 1 else ''}"
    pairs: list[tuple[str, Any]] = [
        ("GPU-hours paid", f"{c.gpu_hours:,.3f} ({gpus})"),
        ("useful", f"{c.useful_pct:.0f}% by {c.measure}"),
    ]
    if c.cost is not None:
        pairs.append(("cost", f"{c.cost:,.2f} {c.currency} at {c.price_per_gpu_hour:,.2f} {c.currency}/GPU-hour"))
        pairs.append(("of it wasted", f"{c.waste_cost:,.2f} {c.currency}" if c.waste_cost is not None else None))
    if c.gpu_hours_at_twice is not None:
        pairs.append(("at twice the activity", f"{c.gpu_hours_at_twice:,.3f} GPU-hours for the same work"))
    pairs.append(("formula", c.formula))
    pairs.append(("note", c.note))
    return kv(pairs)


def _host(r: RunReport) -> str:
    h = r.host
    gib = 2**30
    out = kv(
        (
            (
                "workload CPU (median)",
                f"{h.workload_cpu_pct:.0f}% of a core" if h.workload_cpu_pct is not None else None,
            ),
            (
                "in the processes on the GPU",
                f"{h.gpu_process_cpu_pct:.0f}% of a core" if h.gpu_process_cpu_pct is not None else None,
            ),
            ("busiest thread", f"{h.top_thread_pct:.0f}%" if h.top_thread_pct is not None else None),
            ("busiest host core", f"{h.max_core_pct:.0f}%" if h.max_core_pct is not None else None),
            ("iowait", f"{h.iowait_pct:.0f}%" if h.iowait_pct is not None else None),
            ("reads", f"{h.read_mb_per_s:,.0f} MB/s" if h.read_mb_per_s is not None else None),
            ("writes", f"{h.write_mb_per_s:,.0f} MB/s" if h.write_mb_per_s else None),
            (
                "workload memory, most",
                f"{h.workload_rss_max_bytes / gib:,.1f} GiB" if h.workload_rss_max_bytes is not None else None,
            ),
            (
                "host memory available, least",
                f"{h.mem_available_min_bytes / gib:,.1f} GiB" if h.mem_available_min_bytes is not None else None,
            ),
        )
    )
    out += loader_html(r)
    if r.processes:
        out += "<h3>Processes on the GPUs</h3>" + table(
            ("GPU", "pid", "whose", "kernels (% of time)", "VRAM (GiB)"),
            (
                (
                    p.gpu,
                    p.pid,
                    p.whose(r.kind),
                    f"{p.sm_util_mean_pct:.0f}" if p.sm_util_mean_pct is not None else "",
                    f"{p.used_max_bytes / gib:,.1f}" if p.used_max_bytes is not None else "",
                )
                for p in r.processes
            ),
            numeric=(0, 1, 3, 4),
        )
    return out


def _profile(page: Page, r: RunReport) -> None:
    p = r.profile
    assert p is not None
    pairs: list[tuple[str, Any]] = [("mode", p.mode)]
    pairs += [("asked", why) for why in p.asked]
    if p.window_s:
        start = f" from +{p.window_s[0] - r.started_s:.1f} s" if r.started_s else ""
        pairs.append(("window", f"{p.window_s[1] - p.window_s[0]:.2f} s{start}"))
    if p.held_s:
        pairs.append(("workload held", f"{p.held_s[1] - p.held_s[0]:.1f} s (left out of the sampler's verdict)"))
    effect = r.verdict.profiler_effect
    if effect:
        pairs.append(
            (
                "GPU-Util",
                f"{effect.inside_pct:.0f}% while profiled, {effect.outside_pct:.0f}% in the rest of the steady run",
            )
        )
    pairs += [
        (f"window {w.index}", window_line(w, r.started_s))
        for w in p.windows
        if len(p.windows) > 1 or w.kind != "steady"
    ]
    pairs += [
        (f"cost on GPU {g}", cost_line(g, e, p.window_s is not None, any(w.window_s for w in p.windows)))
        for g, e in sorted(p.effects.items())
    ]
    pairs.append(("error", p.error))
    pairs.append(("trace kept", p.kept_trace))
    page.section("Profiler", kv(pairs))
    if p.trace is not None:
        add_trace(page, p.trace, "Profiler: ")


def run_page(r: RunReport) -> Page:
    names = sorted({g.name for g in r.meta.gpus.values() if g.name})
    what = " ".join(r.command) if r.kind == "run" else r.kind
    title = f"{r.kind.capitalize()}{f' #{r.id}' if r.id is not None else ''}: {what}"
    exit_note = f"exit {r.exit_code}" if r.exit_code is not None else ""
    page = Page(
        title,
        " · ".join(
            x
            for x in (
                r.meta.hostname,
                ", ".join(names),
                when(r.started_s),
                _duration(r),
                exit_note,
                "" if r.complete else "incomplete",
            )
            if x
        ),
    )
    if r.notes:
        page.section("Notes", "".join(f"<p>{esc(n)}</p>" for n in r.notes))
    page.section("Verdict", _verdict(r), "verdict")
    page.section("Findings", findings_html(r.beside_verdict()))
    for key, g in r.verdict.per_gpu.items():
        name = (r.meta.gpus[key].name if key in r.meta.gpus else None) or ""
        page.section(f"GPU {key} {name}".strip() + ": timeline", _gpu(page, r, key, g))
    if r.throughput is not None:
        page.section("Throughput", _throughput(r))
    if r.cost is not None:
        page.section("Cost", _cost(r))
    page.section("Host", _host(r))
    if r.stacks is not None:
        page.section("Python threads", _stacks(r))
    if r.ranks is not None and r.ranks.per_rank:
        page.section("Ranks", ranks_html(r.ranks))
    add_memory(page, r)
    if r.blind_spots:
        page.section(
            "What this run could not see",
            table(("verdict", "why", "what would see it"), ((b.bottleneck.value, b.why, b.how) for b in r.blind_spots)),
        )
    if r.profile is not None:
        _profile(page, r)
    if r.baseline is not None:
        page.section(f"Against the baseline ({r.baseline.a})", diff_html(r.baseline))
    return page
