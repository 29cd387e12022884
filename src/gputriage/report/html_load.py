"""A load test in the HTML report: throughput and latency percentiles against the load (the knee marked),
what the GPUs and the server did at each step, the findings."""

from __future__ import annotations

from typing import Any

from gputriage.model.load import LoadReport, LoadStep, Slo
from gputriage.report.html_page import Page, esc, findings_html, kv, table, when

SLO_COLOR = "#c0392b"  # an SLO's bound, drawn as a flat line on the latency chart


def _x(s: LoadStep) -> float:
    return float(s.concurrency if s.concurrency is not None else s.rate_per_s or 0.0)


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:,.1f}"


def _step(s: LoadStep) -> str:
    return f"{_x(s):g}" + (" (control)" * s.control)


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}%"


def _during(s: LoadStep) -> tuple[str, ...]:
    """What the GPU, the server and the machine did over a step (the busiest GPU)."""
    g = max(s.gpus, key=lambda q: q.sm_active_pct or q.util_pct or 0) if s.gpus else None
    sv, proc = s.server, s.server_process
    return (
        _step(s),
        _pct((g.sm_active_pct if g.sm_active_pct is not None else g.util_pct) if g else None),
        _pct(100 * g.used_max_bytes / g.total_bytes if g and g.used_max_bytes and g.total_bytes else None),
        _pct(sv.kv_cache_usage_max_pct if sv else None),
        f"{sv.running_max:g} / {sv.waiting_max or 0:g}" if sv and sv.running_max is not None else "-",
        _pct(proc.cpu_pct if proc else None),
        _pct(s.machine_cpu_pct),
        _pct(s.client_cpu_pct),
    )


def _latency_series(steps: list[LoadStep], slo: Slo | None) -> list[dict[str, Any]]:
    """TTFT, TPOT and ITL against the load; with SLOs, the percentile they are held at and each bound as a flat
    line."""

    def series(label: str, values: list[float | None], color: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"label": label, "values": values, "scale": "ms", "unit": " ms"}
        return out | ({"color": color} if color else {})

    out = [
        series("TTFT p50", [s.ttft.p50_ms for s in steps]),
        series("TTFT p90", [s.ttft.p90_ms for s in steps]),
        series("TTFT p99", [s.ttft.p99_ms for s in steps]),
        series("TPOT p50", [s.tpot.p50_ms for s in steps]),
        series("ITL p99", [s.itl.p99_ms for s in steps]),
    ]
    if slo is None:
        return out
    q = f"p{slo.percentile}"
    for name, bound, pct in (
        ("TTFT", slo.ttft_ms, "ttft"),
        ("TPOT", slo.tpot_ms, "tpot"),
        ("ITL", slo.itl_ms, "itl"),
        ("E2E", slo.e2e_ms, "e2e"),
    ):
        if bound is None:
            continue
        if f"{name} {q}" not in {s["label"] for s in out}:
            out.append(series(f"{name} {q}", [getattr(getattr(s, pct), f"{q}_ms") for s in steps]))
        out.append(series(f"SLO: {name} {q} ≤ {bound:g} ms", [bound] * len(steps), SLO_COLOR))
    return out


def load_page(r: LoadReport) -> Page:
    m = r.meta
    page = Page(
        f"Load{f' #{r.id}' if r.id is not None else ''}: {m.model}",
        " · ".join(x for x in (f"{m.url}{m.endpoint}", ", ".join(m.gpu_names), when(r.started_s)) if x),
    )
    if r.notes:
        page.section("Notes", "".join(f"<p>{esc(n)}</p>" for n in r.notes))
    steps = sorted((s for s in r.steps if not s.control), key=_x)
    by = "concurrency" if m.shape == "sweep" else "requests/s asked"
    knee = r.knee
    knee_x = knee.concurrency if knee and knee.concurrency is not None else knee.rate_per_s if knee else None
    marks = [{"x": knee_x, "label": "knee"}] if knee_x is not None else []
    x = [_x(s) for s in steps]
    log = m.shape == "sweep" and len(x) > 2 and all(v > 0 for v in x)
    charts = page.chart(
        "Throughput against the load",
        x,
        [
            {"label": "output tokens/s", "values": [s.output_tokens_per_s for s in steps], "scale": "tok", "unit": ""},
            {"label": "requests/s", "values": [s.requests_per_s for s in steps], "scale": "req", "unit": ""},
        ]
        + (
            [{"label": "goodput (requests/s in SLO)", "values": [s.goodput_per_s for s in steps], "scale": "req"}]
            if m.slo
            else []
        ),
        axes=[
            {"scale": "tok", "label": "tokens/s", "side": "left", "zero": True},
            {"scale": "req", "label": "requests/s", "side": "right", "zero": True},
        ],
        x_label=by,
        marks=marks,
        sync="load",
        x_log=2 if log else None,
    )
    charts += page.chart(
        "Latency against the load",
        x,
        _latency_series(steps, m.slo),
        axes=[{"scale": "ms", "label": "ms", "side": "left", "zero": True}],
        x_label=by,
        marks=marks,
        sync="load",
        x_log=2 if log else None,
    )
    if knee and knee_x is not None:
        verdict = (
            f'<p class="big" data-knee="{esc(knee_x)}">knee: {esc(by)} {esc(knee_x)}</p>'
            f'<p class="why">{esc(knee.why)}</p>'
        )
    else:
        verdict = (
            '<p class="big">no knee within the sweep</p>'
            f'<p class="why">{esc(knee.why if knee else "no step completed a request")}</p>'
        )
    page.section("Latency against throughput", verdict + charts, "verdict")
    page.section("Findings", findings_html(r.findings))
    page.section(
        "Steps: latency and throughput",
        table(
            (
                by,
                "ok",
                "errors",
                "req/s",
                "out tok/s",
                "TTFT p50 ms",
                "TTFT p99",
                "ITL p50",
                "ITL p99",
                "TPOT p50",
                "E2E p99",
                "in SLO",
            ),
            [
                (
                    _step(s),
                    s.ok,
                    sum(s.errors.values()) or "",
                    f"{s.requests_per_s:,.2f}",
                    f"{s.output_tokens_per_s:,.0f}",
                    _ms(s.ttft.p50_ms),
                    _ms(s.ttft.p99_ms),
                    _ms(s.itl.p50_ms),
                    _ms(s.itl.p99_ms),
                    _ms(s.tpot.p50_ms),
                    _ms(s.e2e.p99_ms),
                    "" if s.meets_slo is None else "yes" if s.meets_slo else "no",
                )
                for s in r.steps
            ],
            numeric=tuple(range(0, 11)),
        ),
    )
    page.section(
        "Steps: the GPU, the server and this machine",
        table(
            (by, "GPU activity", "VRAM", "KV cache", "running / waiting", "server CPU", "host CPU", "client CPU"),
            [_during(s) for s in r.steps],
            numeric=(0, 1, 2, 3, 5, 6, 7),
        ),
    )
    slo = m.slo
    page.section(
        "How it was loaded",
        kv(
            (
                ("shape", "concurrency sweep" if m.shape == "sweep" else f"request rates, burstiness {m.burstiness}"),
                ("prompts", m.prompts_file or f"~{m.input_tokens} tokens, {m.output_tokens} out"),
                (
                    "long prompts",
                    f"{m.long_prompt_share:.0%} x{m.long_prompt_factor:g}" if m.long_prompt_share else None,
                ),
                ("per step", f"{m.requests_per_step} requests or {m.seconds_per_step:g} s"),
                ("warm-up", f"{m.warmup_requests} requests, not counted"),
                (
                    "SLO",
                    ", ".join(
                        f"{k.replace('_ms', '')} ≤ {v:g} ms"
                        for k, v in (
                            ("ttft_ms", slo.ttft_ms),
                            ("tpot_ms", slo.tpot_ms),
                            ("itl_ms", slo.itl_ms),
                            ("e2e_ms", slo.e2e_ms),
                        )
                        if v is not None
                    )
                    + f" at p{slo.percentile}"
                    if slo
                    else None,
                ),
                ("server on this machine", "yes" if m.local_server else "no"),
            )
        ),
    )
    return page
