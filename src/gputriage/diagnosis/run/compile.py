"""What `torch.compile` did silently, as the rules `run.graph_breaks` and `run.recompiles` name it: graph breaks
split the compiled graph and run the code around each break eagerly; recompilations stall the workload for seconds
each, and past dynamo's cache limit the function runs eagerly for good. No error says so; dynamo's counters, reported
from inside the workload (`inworkload.dynamo_counters`), do. Here: how a function and a break are named, and the
decision a verdict takes first where dynamo gave up (`eager_fallback`)."""

from __future__ import annotations

from pathlib import Path

from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.compile import BreakSite, CompiledFunction, CompileStats


def plural(n: int) -> str:
    return "s" if n != 1 else ""


def where(f: CompiledFunction) -> str:
    """`forward() (model.py:21)`, or `forward() after line 27` for the code after a graph break."""
    if f.after_break:
        return f"{f.function}() after line {f.line}"
    return f"{f.function}()" + (f" ({Path(f.file).name}:{f.line})" if f.file else "")


def site(s: BreakSite) -> str:
    return f"{Path(s.file).name + ':' if s.file else 'line '}{s.line} in {s.function}()"


EAGER_LOOKING = frozenset({B.launch_bound, B.sync_bound})  # what a compiled model run eagerly again looks like


def eager_fallback(stats: CompileStats | None) -> str:
    """What runs eagerly because dynamo gave up on it (the recompile limit, a graph break inside a loop), said as the
    first thing to fix where the run looks launch- or sync-bound; "" where nothing fell back."""
    gave_up = [f for f in (stats.compiled_functions if stats else []) if f.fallback]
    if not gave_up:
        return ""
    names = ", ".join(f"{where(f)} ({f.fallback})" for f in gave_up[:3])
    return (
        f"torch.compile gave up on {names}: it runs eagerly, one small kernel and one launch at a time — fix that "
        "first (run.recompiles, run.graph_breaks); then: "
    )
