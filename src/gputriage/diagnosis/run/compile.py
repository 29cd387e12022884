"""What `torch.compile` did silently (`run.graph_breaks`, `run.recompiles`): graph breaks split the compiled graph
and run the code around each break eagerly; recompilations stall the workload for seconds each, and past dynamo's
cache limit the function runs eagerly for good. No error says so; dynamo's counters, reported from inside the
workload (`inworkload.dynamo_counters`), do."""

from __future__ import annotations

from pathlib import Path

from gputriage.model.compile import CompileStats
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
    commands=("run",),
    needs=("python", "torch.compile"),
    symptom="torch.compile split the workload's graph",
    cause="Code dynamo cannot trace (a `.item()` or `.tolist()` that decides a branch, a print, a call into an "
    "untraceable library) breaks the graph: the code around each break runs eagerly, with its launches and "
    "without fusion, and each piece is compiled and guarded on its own",
    decision="Remove the break where it happens (keep values on the GPU, `torch.where` instead of a Python branch, "
    "`torch._dynamo.config.capture_scalar_outputs = True` for `.item()`); `torch._dynamo.explain(fn)(*args)` "
    "lists every break; `gputriage run` again shows whether they are gone",
    condition="dynamo's graph_break counter > 0 in the workload",
)

RECOMPILES = FindingSpec(
    id="run.recompiles",
    step=2,
    severity=Severity.warn,
    commands=("run",),
    needs=("python", "torch.compile"),
    symptom="torch.compile recompiled the workload's functions",
    cause="A guard failed (a new shape under `dynamic=False`, a changed Python value, a new dtype): each "
    "recompilation stalls the workload for seconds while the GPU waits, and past the cache limit "
    "(torch._dynamo.config.cache_size_limit) the function runs eagerly for good",
    decision="Pad or bucket shapes to a few sizes, mark the varying dimension dynamic "
    "(`torch._dynamo.mark_dynamic`, or `dynamic=None`/`True`), or keep Python values the graph reads "
    "constant; `TORCH_LOGS=recompiles` prints the guard that failed",
    condition=f"recompilations >= {RECOMPILES_MIN.value:g} over the run",
    thresholds=(RECOMPILES_MIN,),
)

SPECS = (GRAPH_BREAKS, RECOMPILES)


def compile_findings(stats: CompileStats | None) -> list[Finding]:
    """The findings of a run's compile report (none without one)."""
    if stats is None:
        return []
    out: list[Finding] = []
    seconds = f", {stats.compile_s:.1f} s compiling" if stats.compile_s else ""
    if stats.graph_breaks:
        places = [
            f"{Path(s.file).name + ':' if s.file else 'line '}{s.line} in {s.function}()" for s in stats.break_sites[:3]
        ]
        evidence: dict[str, object] = {"graph_breaks": stats.graph_breaks, "frames_compiled": stats.frames_compiled}
        if stats.break_reasons:
            evidence["reasons"] = [f"{b.reason} ({b.count}x)" for b in stats.break_reasons[:3]]
        if places:
            evidence["resumes_at"] = places
        where = (
            (
                f" at {len(stats.break_sites)} place{'s' if len(stats.break_sites) != 1 else ''} ("
                + ", ".join(places)
                + ")"
            )
            if places
            else ""
        )
        symptom = (
            f"torch.compile split the graph{where}: {stats.graph_breaks} break"
            f"{'s' if stats.graph_breaks != 1 else ''} over {stats.frames_compiled} compilation"
            f"{'s' if stats.frames_compiled != 1 else ''}{seconds}"
        )
        out.append(GRAPH_BREAKS.finding(evidence, subject="workload", symptom=symptom))
    if stats.recompiles is not None and stats.recompiles >= RECOMPILES_MIN.value:
        names = ", ".join(f.function for f in stats.compiled_functions[:3])
        evidence = {"recompiles": stats.recompiles, "frames_compiled": stats.frames_compiled}
        if stats.compile_s is not None:
            evidence["compile_s"] = stats.compile_s
        if names:
            evidence["functions"] = names
        out.append(
            RECOMPILES.finding(
                evidence,
                subject="workload",
                symptom=f"torch.compile recompiled {stats.recompiles} times"
                + (f" ({names})" if names else "")
                + seconds,
            )
        )
    return out
