"""Analyze one or more Kineto traces (one per rank): anatomy, kernel table, verdict, findings,
and across ranks: stragglers and communication/computation overlap."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from gputriage.model.finding import Finding
from gputriage.model.numbers import median
from gputriage.model.specs import match
from gputriage.trace import kernel_kinds as kk
from gputriage.trace.anatomy import WARMUP_STEP_RATIO, Anatomy, gpu_kinds
from gputriage.trace.anatomy import analyze as anatomy_of
from gputriage.trace.kernels import table
from gputriage.trace.load import KERNEL, Columns, TraceError, load
from gputriage.trace.verdict import decide
from gputriage.trace.verdict import findings as findings_of

TRACE_SCHEMA = "gputriage.trace"
TRACE_VERSION = 1
STRAGGLER_PCT = 10.0


def _elementwise_bytes(cols: Columns, kinds: list[str]) -> tuple[float, int]:
    """Median bytes per elementwise op, and how many distinct elementwise kernels run over large tensors."""
    from gputriage.trace.verdict import CHAIN_MIN_BYTES

    ext_bytes: dict[int, float] = {}
    for ext, b in zip(cols.o_ext, cols.o_bytes):
        if ext >= 0 and b:
            ext_bytes.setdefault(ext, b)
    sizes, big_names = [], set()
    for i, (e, k) in enumerate(zip(cols.g_ext, kinds)):
        if k == kk.ELEMENTWISE and e in ext_bytes:
            sizes.append(ext_bytes[e])
            if ext_bytes[e] >= CHAIN_MIN_BYTES:
                big_names.add(cols.g_name[i])
    return (median(sizes) if sizes else 0.0), len(big_names)


def _overlap(cols: Columns, kinds: list[str], device: int) -> dict[str, Any] | None:
    """Share of communication kernel time that runs while a compute kernel runs on another stream."""
    comm = [(cols.g_ts[i], cols.g_ts[i] + cols.g_dur[i]) for i, k in enumerate(kinds)
            if k == kk.COMM and cols.g_dev[i] == device]
    if not comm:
        return None
    compute = sorted((cols.g_ts[i], cols.g_ts[i] + cols.g_dur[i]) for i, k in enumerate(kinds)
                     if k != kk.COMM and cols.g_kind[i] == KERNEL and cols.g_dev[i] == device)
    merged: list[list[float]] = []
    for s, e in compute:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    import bisect

    starts = [m[0] for m in merged]
    total = overlapped = 0.0
    for s, e in comm:
        total += e - s
        j = max(0, bisect.bisect_right(starts, s) - 1)
        while j < len(merged) and merged[j][0] < e:
            overlapped += max(0.0, min(e, merged[j][1]) - max(s, merged[j][0]))
            j += 1
    return {"comm_us": round(total, 1), "overlapped_pct": round(100 * overlapped / total, 1) if total else 0.0}


MIN_KERNELS = 10
MIN_BUSY_US = 50_000.0


def too_little(a: Anatomy) -> bool:
    """Too few kernels (unless they are long) to name a bottleneck from."""
    return a.kernel_count < MIN_KERNELS and a.busy_total_us < MIN_BUSY_US


def analyze_file(path: str | Path) -> tuple[dict[str, Any], list[Finding]]:
    t0 = time.perf_counter()
    cols = load(path)
    kinds = gpu_kinds(cols)
    props = cols.header.deviceProperties[0] if cols.header.deviceProperties else {}
    spec = match(name=props.get("name")) if props.get("name") else None
    anatomies = anatomy_of(cols, kinds)
    rank = (cols.header.distributedInfo or {}).get("rank")
    result: dict[str, Any] = {
        "file": str(path), "rank": rank, "events": cols.events, "file_bytes": cols.file_bytes,
        "gpu": props.get("name"), "spec": spec.name if spec else None, "problems": list(cols.problems),
        "skipped_event_kinds": cols.skipped_kinds,
    }

    def no_verdict(problem: str) -> tuple[dict[str, Any], list[Finding]]:
        result["problems"].append(problem)
        result["verdict"] = None
        result["parse_s"] = round(time.perf_counter() - t0, 3)
        return result, []

    if not anatomies:
        return no_verdict("no GPU activity (kernels, copies) in this trace: was CUDA profiling on?")
    main = max(anatomies, key=lambda a: a.busy_total_us)
    if main.warmup_skipped_us:
        result["problems"].append(
            f"the first profiled step ({main.warmup_skipped_us / 1000:.0f} ms, over {WARMUP_STEP_RATIO:g}x the later "
            "steps) is left out: profiler warm-up (kernels loaded and instrumented at their first launch)")
    if main.queued_skipped_us:
        result["problems"].append(
            f"the first {main.queued_skipped_us / 1000:.0f} ms are left out: the GPU was still running work queued "
            "before the profiler started (its first recorded kernel waited that long after its launch)")
    if too_little(main):
        result["anatomy"] = [a.to_json() for a in anatomies]
        return no_verdict(f"too little GPU activity to judge: a {main.window_us / 1000:.1f} ms window with "
                          f"{main.kernel_count} kernels (profile the steady state for longer)")
    kernels = table(cols, kinds, spec)
    verdict = decide(main)
    found = findings_of(main, kernels, verdict, *_elementwise_bytes(cols, kinds), spec=spec)
    result.update({
        "anatomy": [a.to_json() for a in anatomies],
        "kernels": kernels,
        "verdict": verdict | {"device": main.device},
        "findings": [f.to_json() for f in found],
        "overlap": _overlap(cols, kinds, main.device),
        "step_count": len(cols.steps),
        "analysis_s": round(time.perf_counter() - t0, 3),
    })
    return result, found


def analyze(paths: list[str | Path]) -> tuple[dict[str, Any], list[Finding]]:
    """Every file, then the cross-rank view. Raises TraceError when no file can be read at all."""
    ranks, all_findings, errors = [], [], []
    for p in paths:
        try:
            r, f = analyze_file(p)
        except TraceError as exc:
            if len(paths) == 1:
                raise
            errors.append(str(exc))
            continue
        ranks.append(r)
        all_findings += f
    if not ranks:
        raise TraceError("; ".join(errors))
    report: dict[str, Any] = {"schema": TRACE_SCHEMA, "version": TRACE_VERSION, "files": [str(p) for p in paths],
                              "ranks": ranks, "problems": errors}
    verdicts = [r["verdict"]["bottleneck"] for r in ranks if r.get("verdict")]
    main = next((r for r in ranks if r.get("verdict")), None)
    report["verdict"] = (main["verdict"] | {"ranks_agreeing": sum(1 for v in verdicts if v == main["verdict"]["bottleneck"]),
                                            "ranks": len(ranks)}) if main else {"bottleneck": None}
    if len(ranks) > 1:
        report["multi_rank"] = _cross_rank(ranks)
    return report, all_findings


def _cross_rank(ranks: list[dict[str, Any]]) -> dict[str, Any]:
    rows = []
    for r in ranks:
        a = (r.get("anatomy") or [{}])[0]
        steps = [s["dur_us"] for s in a.get("steps", [])]
        rows.append({"rank": r.get("rank"), "file": r["file"], "window_us": a.get("window_us"),
                     "busy_pct": a.get("busy_pct"), "median_step_us": median(steps) if steps else None,
                     "bottleneck": (r.get("verdict") or {}).get("bottleneck"),
                     "comm_overlapped_pct": (r.get("overlap") or {}).get("overlapped_pct")})
    basis = "median_step_us" if all(x["median_step_us"] for x in rows) else "window_us"
    values = [x[basis] for x in rows if x[basis]]
    med = median(values) if values else 0
    stragglers = [x["rank"] if x["rank"] is not None else x["file"] for x in rows
                  if med and x[basis] and 100 * (x[basis] - med) / med >= STRAGGLER_PCT]
    busy = [x["busy_pct"] for x in rows if x["busy_pct"] is not None]
    return {"per_rank": rows, "compared_on": basis, "stragglers": stragglers,
            "busy_pct_spread": round(max(busy) - min(busy), 1) if busy else None}
