"""An allocator snapshot in the HTML report: the verdict on its out-of-memory error, the live memory over time by
its top lines (where the history was recorded), the map of its segments at the failure, the top lines, the
processes on the GPU, the findings."""

from __future__ import annotations

from gputriage.model.memory import MemoryLine, MemoryReport, MemoryState, SegmentMap, short_label, size_text
from gputriage.report.html_page import PALETTE, Page, esc, findings_html, kv, table, when
from gputriage.report.memory_terminal import PHASE, error_line, figures

OTHER_LIVE = "#9aa3b2"  # a live block of a line not among the top ones
PENDING = "#e0b050"  # freed, awaiting another stream
FREE = "#f3f4f7"


def _gib(values: list[int]) -> list[float]:
    return [round(v / 2**30, 3) for v in values]


def timeline_html(page: Page, s: MemoryState) -> str:
    series = s.series
    if series is None or not series.t_s:
        return (
            '<p class="muted">No history recorded: the live memory over time needs the allocator\'s history '
            "(torch.cuda.memory._record_memory_history(), or `gputriage run`, which arms it when memory may run "
            "out).</p>"
        )
    lines = [
        {"label": short_label(*_split(name)), "values": _gib(values), "scale": "gib", "unit": " GiB"}
        for name, values in zip(series.lines, series.by_line)
    ]
    return page.chart(
        "Live memory over time, in all and by line (the highest of each instant)",
        series.t_s,
        [{"label": "live, all lines", "values": _gib(series.total_bytes), "scale": "gib", "unit": " GiB"}, *lines],
        axes=[{"scale": "gib", "label": "GiB", "side": "left", "zero": True}],
        x_label=f"seconds since the first of {series.events:,} events recorded",
        height=300,
    )


def _split(label: str) -> tuple[str, int]:
    file, _, line = label.rpartition(":")
    return (file, int(line)) if line.isdigit() else (label, 0)


def _segment_row(seg: SegmentMap, lines: list[MemoryLine], largest: int) -> str:
    """One segment as a bar as wide as its size against the largest one's, its blocks in address order."""
    total = seg.total_bytes or 1
    spans = []
    for size, state, line in seg.blocks:
        if state == 1:
            color = PALETTE[line % len(PALETTE)] if line >= 0 else OTHER_LIVE
            what = short_label(lines[line].file, lines[line].line) if 0 <= line < len(lines) else "another line"
        else:
            color, what = (PENDING, "freed, awaiting a stream") if state == 2 else (FREE, "free")
        spans.append(
            f'<span title="{esc(what)} {esc(size_text(size))}" '
            f'style="width:{100 * size / total:.3f}%;background:{color}"></span>'
        )
    label = f"{size_text(seg.total_bytes)} {seg.pool}" + (f", stream {seg.stream}" if seg.stream else "")
    label += f", {seg.merged_blocks} small blocks merged" if seg.merged_blocks else ""
    width = max(1.0, 100 * seg.total_bytes / (largest or 1))
    return (
        f'<div class="stack" title="{esc(label)}" '
        f'style="height:12px;margin:2px 0;width:{width:.2f}%;border:1px solid #d5d8df">{"".join(spans)}</div>'
    )


def segments_html(s: MemoryState) -> str:
    if not s.segment_map:
        return '<p class="muted">No segments.</p>'
    legend = [(short_label(ln.file, ln.line), PALETTE[i % len(PALETTE)]) for i, ln in enumerate(s.top_lines)]
    legend += [("another line", OTHER_LIVE), ("freed, awaiting a stream", PENDING), ("free", FREE)]
    keys = "".join(f'<span><i style="background:{c};border:1px solid #ccc"></i>{esc(t)}</span>' for t, c in legend)
    shown = len(s.segment_map)
    head = (
        f'<p class="muted">The {shown} largest of {s.segments} segments (each a cudaMalloc), as wide as their '
        "size, each block in its place (hover for its line and size).</p>"
    )
    largest = max(seg.total_bytes for seg in s.segment_map)
    rows = "".join(_segment_row(seg, s.top_lines, largest) for seg in s.segment_map)
    return head + f'<div class="legend">{keys}</div>' + rows


def lines_html(lines: list[MemoryLine], growth: bool) -> str:
    return table(
        ("line", "function", "live", "blocks", *(("grown",) if growth else ()), "called from"),
        [
            (
                short_label(ln.file, ln.line),
                ln.function,
                size_text(ln.bytes),
                ln.blocks,
                *((size_text(ln.growth_bytes) if ln.growth_bytes else "",) if growth else ()),
                ln.via or "",
            )
            for ln in lines
        ],
        numeric=(2, 3, 4) if growth else (2, 3),
    )


def memory_page(r: MemoryReport) -> Page:
    s = r.state
    page = Page(f"Memory: {r.source or 'allocator snapshot'}", figures(s))
    grew = any(f.id == "memory.growing" for f in r.findings)
    verdict = f'<p class="big">{esc(r.cause or ("no cause named" if s.oom else "no out-of-memory error"))}</p>'
    verdict += f'<p class="why">{esc(r.summary)}</p>'
    if s.oom is not None:
        verdict += f"<p>{esc(error_line(s))}</p>"
    page.section("Verdict", verdict, "verdict")
    page.section("Findings", findings_html(r.findings))
    page.section("Top live allocations by Python line", lines_html(s.top_lines, grew))
    if grew and s.growth_lines:
        page.section("Lines whose live bytes grew", lines_html(s.growth_lines, True))
    page.section("Live memory over time", timeline_html(page, s))
    page.section("Segment map at the failure" if s.oom else "Segment map", segments_html(s))
    if s.processes:
        page.section(
            "Processes on the GPU at the error (NVML)",
            table(
                ("pid", "used", "whose", "name", "container or pod"),
                [
                    (p.pid, size_text(p.used_bytes), "this job" if p.own else "another", p.name or "", p.owner or "")
                    for p in sorted(s.processes, key=lambda p: -(p.used_bytes or 0))
                ],
                numeric=(0, 1),
            ),
        )
    oom = s.oom
    page.section(
        "The allocator",
        kv(
            (
                ("reserved", size_text(s.reserved_bytes)),
                ("allocated", size_text(s.allocated_bytes)),
                ("freed, awaiting a stream", size_text(s.pending_free_bytes) if s.pending_free_bytes else None),
                ("free in the cache", size_text(s.cached_free_bytes)),
                ("largest free block", size_text(s.largest_free_bytes)),
                ("fragmentation", f"{s.fragmentation:.0%}" if s.fragmentation is not None else None),
                ("PYTORCH_CUDA_ALLOC_CONF", s.allocator_settings or None),
                ("allocation stacks", "recorded" if s.stacks else "not recorded"),
                ("phase of the error", PHASE.get(oom.phase, oom.phase) if oom and oom.phase else None),
                ("at", when(oom.t_s) if oom else None),
            )
        ),
    )
    if r.notes:
        page.section("Notes", "".join(f"<p>{esc(n)}</p>" for n in r.notes))
    return page
