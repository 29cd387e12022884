"""A fleet check in the HTML report: the nodes in a table with their figures against the fleet's median
(bars), the fleet's findings, the tables of the outliers and the drift, the nodes' findings by id, the idle share
and its cost."""

from __future__ import annotations

from gputriage.model.fleet import FleetReport, NodeResult
from gputriage.report.fleet_terminal import gpus_cell
from gputriage.report.html_page import Page, Raw, bar, esc, findings_html, kv, table, when

FIGURES = (
    ("bf16_tflops", "bf16 TFLOP/s"),
    ("memory_gbs", "memory GB/s"),
    ("pcie_width", "PCIe lanes"),
    ("sm_clock_max_mhz", "SM max MHz"),
    ("power_limit_w", "power limit W"),
)


def _who(n: NodeResult) -> str:
    return (
        n.name
        or (n.figures.hostname if n.figures and n.figures.hostname else "")
        or n.hostname
        or n.address
        or n.short_id
    )


def fleet_page(r: FleetReport) -> Page:
    ok = [n for n in r.nodes if n.ok and n.figures is not None]
    page = Page(
        f"Fleet: {len(ok)} of {len(r.nodes)} nodes answered",
        " · ".join(x for x in (r.address, "with bench --quick" if r.bench else "", when(r.started_s)) if x),
    )
    if r.notes:
        page.section("Notes", "".join(f"<p>{esc(n)}</p>" for n in r.notes))
    off = {(o.node, o.figure) for o in r.outliers}
    tops = {k: max((getattr(n.figures, k) or 0) for n in ok) if ok else 0 for k, _ in FIGURES}
    rows = []
    for n in r.nodes:
        f = n.figures
        if not n.ok or f is None:
            rows.append(
                (
                    _who(n),
                    n.short_id,
                    Raw('<b class="worse">failed</b>'),
                    n.error or "",
                    *([""] * (len(FIGURES) + 1)),
                )
            )
            continue
        gpus: object = Raw(f'<b class="worse">{esc(gpus_cell(n))}</b>') if n.gpus_not_visible else gpus_cell(n)
        cells: list[object] = [_who(n), n.short_id, gpus, f.driver or "-"]
        for key, _label in FIGURES:
            v = getattr(f, key)
            color = "#c0392b" if (_who(n), key) in off else "#3b7dd8"
            cells.append(
                Raw(
                    f'<span data-figure="{esc(key)}">{esc(f"{v:g}" if v is not None else "-")}</span>'
                    + (bar(v, color, scale_pct=tops[key]).html if v is not None and tops[key] else "")
                )
            )
        cells.append(len(n.findings))
        rows.append(tuple(cells))
    page.section("Nodes", table(["node", "id", "GPUs", "driver", *(label for _, label in FIGURES), "findings"], rows))
    if r.findings:
        page.section("The fleet's findings", findings_html(r.findings), "verdict")
    if r.outliers:
        page.section(
            "Below the fleet",
            table(
                ("node", "figure", "value", "fleet median", "threshold"),
                (
                    (o.node, o.figure, f"{o.value:g} {o.unit}", f"{o.fleet_median:g}", f"{o.threshold:g}")
                    for o in r.outliers
                ),
                numeric=(2, 3, 4),
            )
            + '<p class="muted">More than a robust spread under the fleet\'s median (<code>gputriage rules '
            "fleet.outlier</code> says how it is measured).</p>",
            "verdict",
        )
    if r.drift:
        page.section(
            "Drift across nodes",
            table(
                ("what", "value", "nodes"), ((d.key, v, ", ".join(ns)) for d in r.drift for v, ns in d.values.items())
            ),
        )
    if r.findings_by_id:
        page.section(
            "Findings by node",
            table(
                ("finding (`gputriage rules ID`)", "nodes"),
                ((fid, ", ".join(ns)) for fid, ns in r.findings_by_id.items()),
            ),
        )
    w = r.waste
    if w is not None:
        page.section(
            "Idle at the check",
            kv(
                (
                    (
                        "GPUs",
                        f"{w.gpus} ({w.not_visible} not visible to the driver, counted idle)"
                        if w.not_visible
                        else w.gpus,
                    ),
                    ("busy", f"{w.busy_pct:.0f}% by {w.measure}"),
                    ("idle", f"{w.idle_gpu_equivalents:g} GPUs' worth"),
                    (
                        "cost of the idle share",
                        f"{w.idle_cost_per_hour:,.2f} {w.currency}/hour at {w.price_per_gpu_hour:g} "
                        f"{w.currency}/GPU-hour"
                        if w.idle_cost_per_hour is not None
                        else None,
                    ),
                    ("note", w.note),
                )
            ),
        )
    return page
