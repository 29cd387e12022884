"""torch.compile recompiled the workload's functions, or one reached dynamo's recompile limit (triage step 2)."""

from __future__ import annotations

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RunEvidence
from gputriage.diagnosis.run.compile import plural, where
from gputriage.inworkload.dynamo_counters import RECOMPILE_LIMIT
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording

RECOMPILES_MIN = Threshold(
    "recompiles_min",
    3.0,
    "recompilations",
    "recompilations over a run from which they are a finding (one or two: a warm-up shape, a last partial batch)",
    "judgement: dynamo's default cache holds 8 per function",
)
RECOMPILED = "torch.compile recompiled {count} time{count_s}{spent}{which}"
LIMITED = "; {limited} reached dynamo's recompile limit: inputs its cache does not hold run eagerly"


def evaluate(ev: RunEvidence) -> list[Finding]:
    """The recompilations of the workload's compile report (none without one): each function, how often, and the
    guard that failed last."""
    stats = ev.rec.compile
    if stats is None:
        return []
    recompiled = [f for f in stats.compiled_functions if f.recompiles]
    limited = [f for f in stats.compiled_functions if f.fallback == RECOMPILE_LIMIT]
    count = stats.recompiles or 0
    if count < RECOMPILES_MIN.value and not limited:
        return []
    evidence: dict[str, object] = {"recompiles": count, "frames_compiled": stats.frames_compiled}
    if stats.compile_s is not None:
        evidence["compile_s"] = stats.compile_s
    if recompiled:  # each function, how often, and the guard that failed last
        rows = [
            f"{where(f)} {f.recompiles}x" + (f" ({f.recompile_reason})" if f.recompile_reason else "")
            for f in recompiled[:3]
        ]
        evidence["functions"] = rows
        which = ": " + "; ".join(rows)
    else:  # a report with no per-function counts
        names = ", ".join(f.function for f in stats.compiled_functions[:3])
        evidence.update({"functions": names} if names else {})
        which = f" ({names})" if names else ""
    fill = {
        "count": count,
        "count_s": plural(count),
        "spent": f" ({stats.compile_s:.1f} s compiling in all)" if stats.compile_s else "",
        "which": which,
    }
    if limited:
        evidence["recompile_limit"] = [where(f) for f in limited]
        fill["limited"] = ", ".join(where(f) for f in limited[:3])
    return [RULE.finding(evidence, subject="workload", say="limited" if limited else "recompiled", fill=fill)]


RULE = Rule(
    FindingSpec(
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
        condition="recompilations >= {recompiles_min:g} over the run, or a function at dynamo's recompile limit",
        thresholds=(RECOMPILES_MIN,),
        says={"recompiled": Wording(symptom=RECOMPILED), "limited": Wording(symptom=RECOMPILED + LIMITED)},
    ),
    evaluate,
)
