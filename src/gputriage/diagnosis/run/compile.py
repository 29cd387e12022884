"""What `torch.compile` did silently (`run.graph_breaks`, `run.recompiles`): graph breaks split the compiled graph
and run the code around each break eagerly; recompilations stall the workload for seconds each, and past dynamo's
cache limit the function runs eagerly for good. No error says so; dynamo's counters, reported from inside the
workload (`inworkload.dynamo_counters`), do."""

from __future__ import annotations

from pathlib import Path

from gputriage.inworkload.dynamo_counters import LOOP_BREAK, RECOMPILE_LIMIT
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.compile import BreakSite, CompiledFunction, CompileStats
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold

RECOMPILES_MIN = Threshold(
    "recompiles_min",
    3.0,
    "recompilations",
    "recompilations over a run from which they are a finding (one or two: a warm-up shape, a last partial batch)",
    "judgement: dynamo's default cache holds 8 per function",
)

GRAPH_BREAKS = FindingSpec(
    id="run.graph_breaks",
    step=2,
    severity=Severity.warn,
    commands=("run", "monitor"),
    needs=("python", "torch.compile"),
    symptom="torch.compile split the workload's graph",
    cause="Code dynamo cannot trace (a `.item()` or `.tolist()` that decides a branch, a print, a call into an "
    "untraceable library) breaks the graph: the code around each break runs eagerly, with its launches and "
    "without fusion, and each piece is compiled and guarded on its own",
    decision="Remove the break where it happens (keep values on the GPU, `torch.where` instead of a Python branch, "
    "`torch._dynamo.config.capture_scalar_outputs = True` for `.item()`); a break inside a loop makes dynamo give "
    "up on the whole function (it runs eagerly): move the branch out of the loop; `torch._dynamo.explain(fn)(*args)` "
    "lists every break; `gputriage run` again shows whether they are gone",
    condition="dynamo met a graph break in the workload (its graph_break counter, or a function it gave up on "
    "for a break inside a loop)",
)

RECOMPILES = FindingSpec(
    id="run.recompiles",
    step=2,
    severity=Severity.warn,
    commands=("run", "monitor"),
    needs=("python", "torch.compile"),
    symptom="torch.compile recompiled the workload's functions",
    cause="A guard failed (a new shape under `dynamic=False`, a changed Python value, a new dtype): each "
    "recompilation stalls the workload for seconds while the GPU waits, and past the cache limit "
    "(torch._dynamo.config.cache_size_limit) the function runs eagerly for good",
    decision="Pad or bucket shapes to a few sizes, mark the varying dimension dynamic "
    "(`torch._dynamo.mark_dynamic`, or `dynamic=None`/`True`), or keep Python values the graph reads "
    "constant; `TORCH_LOGS=recompiles` prints the guard that failed",
    condition=f"recompilations >= {RECOMPILES_MIN.value:g} over the run, or a function at dynamo's recompile limit",
    thresholds=(RECOMPILES_MIN,),
)

SPECS = (GRAPH_BREAKS, RECOMPILES)


def _s(n: int) -> str:
    return "s" if n != 1 else ""


def _where(f: CompiledFunction) -> str:
    """`forward() (model.py:21)`, or `forward() after line 27` for the code after a graph break."""
    if f.after_break:
        return f"{f.function}() after line {f.line}"
    return f"{f.function}()" + (f" ({Path(f.file).name}:{f.line})" if f.file else "")


def _site(s: BreakSite) -> str:
    return f"{Path(s.file).name + ':' if s.file else 'line '}{s.line} in {s.function}()"


def _breaks(stats: CompileStats, seconds: str) -> Finding:
    split = [s for s in stats.break_sites if not s.in_loop]
    looped = [s for s in stats.break_sites if s.in_loop]
    evidence: dict[str, object] = {"graph_breaks": stats.graph_breaks, "frames_compiled": stats.frames_compiled}
    if stats.break_reasons:
        evidence["reasons"] = [f"{b.reason} ({b.count}x)" for b in stats.break_reasons[:3]]
    if split:
        evidence["resumes_at"] = [_site(s) for s in split[:3]]
    parts = []
    if split:  # the graph split, the code around each break run eagerly
        why = f" — {stats.break_reasons[0].reason}" if stats.break_reasons else ""
        n = stats.graph_breaks - (stats.loop_breaks if stats.loop_breaks is not None else sum(s.count for s in looped))
        parts.append(
            f"split the graph at {len(split)} place{_s(len(split))} ({', '.join(_site(s) for s in split[:3])}): "
            f"{n} break{_s(n)} over {stats.frames_compiled} compilation"
            f"{_s(stats.frames_compiled)}{seconds}{why}"
        )
    skipped = [f for f in stats.compiled_functions if f.fallback == LOOP_BREAK]
    if looped or skipped:  # no split: dynamo compiled none of these functions
        breaks_at = [_site(s) for s in looped[:3]]
        eager = [_where(f) for f in skipped] or [f"{s.function}()" for s in looped]
        evidence.update(breaks_at=breaks_at, eager=eager)
        places = f" ({', '.join(breaks_at)})" if breaks_at else ""
        parts.append(
            f"gave up on {', '.join(eager[:3])}: a graph break inside a loop{places} makes it run eagerly, uncompiled"
        )
    if not parts:  # an older report: a count, no place
        parts.append(f"split the graph: {stats.graph_breaks} break{_s(stats.graph_breaks)}{seconds}")
    elif not split:
        parts[-1] += seconds
    return GRAPH_BREAKS.finding(evidence, subject="workload", symptom="torch.compile " + "; it ".join(parts))


def _recompiles(stats: CompileStats) -> Finding | None:
    recompiled = [f for f in stats.compiled_functions if f.recompiles]
    limited = [f for f in stats.compiled_functions if f.fallback == RECOMPILE_LIMIT]
    count = stats.recompiles or 0
    if count < RECOMPILES_MIN.value and not limited:
        return None
    evidence: dict[str, object] = {"recompiles": count, "frames_compiled": stats.frames_compiled}
    if stats.compile_s is not None:
        evidence["compile_s"] = stats.compile_s
    if recompiled:  # each function, how often, and the guard that failed last
        rows = [
            f"{_where(f)} {f.recompiles}x" + (f" ({f.recompile_reason})" if f.recompile_reason else "")
            for f in recompiled[:3]
        ]
        evidence["functions"] = rows
        which = ": " + "; ".join(rows)
    else:  # a report with no per-function counts
        names = ", ".join(f.function for f in stats.compiled_functions[:3])
        evidence.update({"functions": names} if names else {})
        which = f" ({names})" if names else ""
    spent = f" ({stats.compile_s:.1f} s compiling in all)" if stats.compile_s else ""
    symptom = f"torch.compile recompiled {count} time{_s(count)}{spent}{which}"
    if limited:
        evidence["recompile_limit"] = [_where(f) for f in limited]
        symptom += (
            f"; {', '.join(_where(f) for f in limited[:3])} reached dynamo's recompile limit: "
            "inputs its cache does not hold run eagerly"
        )
    return RECOMPILES.finding(evidence, subject="workload", symptom=symptom)


def compile_findings(stats: CompileStats | None) -> list[Finding]:
    """The findings of a run's compile report (none without one): graph breaks and recompilations, each named
    where it happens."""
    if stats is None:
        return []
    seconds = f", {stats.compile_s:.1f} s compiling" if stats.compile_s else ""
    out = [_breaks(stats, seconds)] if stats.graph_breaks else []
    recompiles = _recompiles(stats)
    return out + ([recompiles] if recompiles is not None else [])


EAGER_LOOKING = frozenset({B.launch_bound, B.sync_bound})  # what a compiled model run eagerly again looks like


def eager_fallback(stats: CompileStats | None) -> str:
    """What runs eagerly because dynamo gave up on it (the recompile limit, a graph break inside a loop), said as the
    first thing to fix where the run looks launch- or sync-bound; "" where nothing fell back."""
    gave_up = [f for f in (stats.compiled_functions if stats else []) if f.fallback]
    if not gave_up:
        return ""
    names = ", ".join(f"{_where(f)} ({f.fallback})" for f in gave_up[:3])
    return (
        f"torch.compile gave up on {names}: it runs eagerly, one small kernel and one launch at a time — fix that "
        "first (run.recompiles, run.graph_breaks); then: "
    )
