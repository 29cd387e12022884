"""Read what `torch.compile` did in the workload (`inworkload.dynamo_counters`): each process's report in the
folder `run` gave it, summed over processes (each rank compiles its own)."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from gputriage.inworkload import dynamo_counters
from gputriage.model.compile import BreakReason, BreakSite, CompiledFunction, CompileStats

MAX_ITEMS = dynamo_counters.MAX_ITEMS


def read_compile_stats(folder: str | Path) -> CompileStats | None:
    """The workload's compile report; None where no process compiled anything (or none reported)."""
    try:
        names = sorted(n for n in os.listdir(folder) if n.startswith(dynamo_counters.PREFIX) and n.endswith(".json"))
    except OSError:
        return None
    reports: list[CompileStats] = []
    for name in names:
        try:
            reports.append(msgspec.json.decode(Path(folder, name).read_bytes(), type=CompileStats))
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            continue  # a file being replaced, or from another version: the others still count
    return merge(reports) if reports else None


def merge(reports: list[CompileStats]) -> CompileStats:
    """Several processes' reports as one: counts summed, reasons, sites and functions merged by name."""
    if len(reports) == 1:
        return reports[0]
    reasons: dict[str, int] = {}
    sites: dict[tuple[str, int, str, bool], int] = {}
    for r in reports:
        for b in r.break_reasons:
            reasons[b.reason] = reasons.get(b.reason, 0) + b.count
        for s in r.break_sites:
            key = (s.function, s.line, s.file, s.in_loop)
            sites[key] = sites.get(key, 0) + s.count
    recompiles = [r.recompiles for r in reports if r.recompiles is not None]
    looped = [r.loop_breaks for r in reports if r.loop_breaks is not None]
    seconds = [r.compile_s for r in reports if r.compile_s is not None]
    return CompileStats(
        frames_compiled=sum(r.frames_compiled for r in reports),
        graph_breaks=sum(r.graph_breaks for r in reports),
        loop_breaks=sum(looped) if looped else None,
        unique_graphs=sum(r.unique_graphs for r in reports),
        recompiles=sum(recompiles) if recompiles else None,
        compile_s=round(sum(seconds), 3) if seconds else None,
        break_reasons=[BreakReason(reason=k, count=v) for k, v in sorted(reasons.items(), key=lambda kv: -kv[1])][
            :MAX_ITEMS
        ],
        break_sites=[
            BreakSite(function=f, line=line, file=file, count=v, in_loop=loop)
            for (f, line, file, loop), v in sorted(sites.items(), key=lambda kv: -kv[1])
        ][:MAX_ITEMS],
        compiled_functions=_functions([f for r in reports for f in r.compiled_functions]),
    )


def _functions(rows: list[CompiledFunction]) -> list[CompiledFunction]:
    """Each function once over the processes that compiled it (every rank compiles the same model): its counts and
    seconds summed, the last guard that failed and why dynamo gave up kept; the costliest first."""
    out: dict[tuple[str, str, int, bool], CompiledFunction] = {}
    for f in rows:
        key = (f.function, f.file, f.line, f.after_break)
        seen = out.get(key)
        if seen is None:
            out[key] = msgspec.structs.replace(f)
            continue
        seen.compilations += f.compilations
        seen.recompiles += f.recompiles
        if f.compile_s is not None:
            seen.compile_s = round((seen.compile_s or 0.0) + f.compile_s, 3)
        seen.recompile_reason = f.recompile_reason or seen.recompile_reason
        seen.fallback = f.fallback or seen.fallback
    return sorted(out.values(), key=lambda f: -(f.compile_s or 0.0))[:MAX_ITEMS]
