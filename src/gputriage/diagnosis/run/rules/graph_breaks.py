"""torch.compile split the workload's graph, or gave up on a function for a break inside a loop (triage step 2)."""

from __future__ import annotations

from typing import Any

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RunEvidence
from gputriage.diagnosis.run.compile import plural, site, where
from gputriage.inworkload.dynamo_counters import LOOP_BREAK
from gputriage.model.compile import CompileStats
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording

SPLIT = (
    "split the graph at {places} place{places_s} ({sites}): {breaks} break{breaks_s} over {frames} "
    "compilation{frames_s}{seconds}{why}"
)
GAVE_UP = "gave up on {eager}: a graph break inside a loop{loop_sites} makes it run eagerly, uncompiled"


def evaluate(ev: RunEvidence) -> list[Finding]:
    """The breaks of the workload's compile report (none without one), named where they happen."""
    stats = ev.rec.compile
    if stats is None or not stats.graph_breaks:
        return []
    split = [s for s in stats.break_sites if not s.in_loop]
    looped = [s for s in stats.break_sites if s.in_loop]
    skipped = [f for f in stats.compiled_functions if f.fallback == LOOP_BREAK]
    evidence: dict[str, object] = {"graph_breaks": stats.graph_breaks, "frames_compiled": stats.frames_compiled}
    if stats.break_reasons:
        evidence["reasons"] = [f"{b.reason} ({b.count}x)" for b in stats.break_reasons[:3]]
    fill = {"seconds": f", {stats.compile_s:.1f} s compiling" if stats.compile_s else "", "breaks": stats.graph_breaks}
    fill["breaks_s"] = plural(stats.graph_breaks)
    if split:  # the graph split, the code around each break run eagerly
        evidence["resumes_at"] = [site(s) for s in split[:3]]
        fill |= _split(stats, split, looped)
    if looped or skipped:  # no split: dynamo compiled none of these functions
        breaks_at = [site(s) for s in looped[:3]]
        eager = [where(f) for f in skipped] or [f"{s.function}()" for s in looped]
        evidence.update(breaks_at=breaks_at, eager=eager)
        fill |= {"eager": ", ".join(eager[:3]), "loop_sites": f" ({', '.join(breaks_at)})" if breaks_at else ""}
    say = ("split" if split else "") + ("_gave_up" if looped or skipped else "")
    return [RULE.finding(evidence, subject="workload", say=say.strip("_") or "counted", fill=fill)]


def _split(stats: CompileStats, split: list[Any], looped: list[Any]) -> dict[str, Any]:
    """Where the graph split and how often: the breaks outside loops, over the compilations."""
    n = stats.graph_breaks - (stats.loop_breaks if stats.loop_breaks is not None else sum(s.count for s in looped))
    return {
        "places": len(split),
        "places_s": plural(len(split)),
        "sites": ", ".join(site(s) for s in split[:3]),
        "breaks": n,
        "breaks_s": plural(n),
        "frames": stats.frames_compiled,
        "frames_s": plural(stats.frames_compiled),
        "why": f" — {stats.break_reasons[0].reason}" if stats.break_reasons else "",
    }


RULE = Rule(
    FindingSpec(
        id="run.graph_breaks",
        step=2,
        severity=Severity.warn,
        commands=("run", "monitor"),
        needs=("python", "torch.compile"),
        symptom="torch.compile split the workload's graph",
        cause="Code dynamo cannot trace (a `.item()` or `.tolist()` that decides a branch, a print, a call into an "
        "untraceable library) breaks the graph: the code around each break runs eagerly, with its launches and "
        "without fusion, and each piece is compiled and guarded on its own",
        decision="Remove the break where it happens (keep values on the GPU, `torch.where` instead of a Python "
        "branch, `torch._dynamo.config.capture_scalar_outputs = True` for `.item()`); a break inside a loop makes "
        "dynamo give up on the whole function (it runs eagerly): move the branch out of the loop; "
        "`torch._dynamo.explain(fn)(*args)` lists every break; `gputriage run` again shows whether they are gone",
        condition="dynamo met a graph break in the workload (its graph_break counter, or a function it gave up on "
        "for a break inside a loop)",
        says={
            "split": Wording(symptom="torch.compile " + SPLIT),
            "split_gave_up": Wording(symptom="torch.compile " + SPLIT + "; it " + GAVE_UP),
            "gave_up": Wording(symptom="torch.compile " + GAVE_UP + "{seconds}"),
            "counted": Wording(symptom="torch.compile split the graph: {breaks} break{breaks_s}{seconds}"),
        },
    ),
    evaluate,
)
