"""The library API: everything the `gputriage` command does, as functions that return typed
reports (msgspec Structs: `msgspec.json.encode(report)` is what `--json` prints).

    import gputriage
    report = gputriage.check()                        # CheckReport: findings in triage order
    report = gputriage.analyze_trace(["trace.json"])  # TraceReport
    report = gputriage.analyze_memory("oom.pickle")   # MemoryReport: what filled the GPU, the kind of OOM
    report = gputriage.run(["python", "train.py"])    # RunReport: the workload's verdict
    with gputriage.monitor() as m:                    # your own code, sampled
        train()
    print(m.report.verdict.bottleneck)
    gputriage.write_html(report, "report.html")       # any report as one self-contained page

Nothing here prints; errors the caller can act on are raised as `GputriageError` subclasses.

Each function's module is imported when the function is first used (`gputriage check` loads what `check`
needs, not the run judge or the load generator): the package's names resolve through `__getattr__`, and
a submodule named like a function (`gputriage.api.run`) never hides that function once imported.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gputriage.api._common import GputriageError, UsageError, WorkloadError
    from gputriage.api.bench import bench
    from gputriage.api.check import catalog, check, snapshot
    from gputriage.api.checklist import checklist
    from gputriage.api.join import join
    from gputriage.api.memory import analyze_memory
    from gputriage.api.monitor import Monitor, monitor
    from gputriage.api.report import write_html
    from gputriage.api.run import PROFILE_MODES, run, runs, show
    from gputriage.api.trace import analyze_trace

WHERE = {
    "GputriageError": "_common",
    "UsageError": "_common",
    "WorkloadError": "_common",
    "bench": "bench",
    "catalog": "check",
    "check": "check",
    "snapshot": "check",
    "checklist": "checklist",
    "join": "join",
    "Monitor": "monitor",
    "monitor": "monitor",
    "write_html": "report",
    "PROFILE_MODES": "run",
    "run": "run",
    "runs": "run",
    "show": "run",
    "analyze_trace": "trace",
    "analyze_memory": "memory",
}

__all__ = [
    "PROFILE_MODES",
    "GputriageError",
    "Monitor",
    "UsageError",
    "WorkloadError",
    "analyze_memory",
    "analyze_trace",
    "bench",
    "catalog",
    "check",
    "checklist",
    "join",
    "monitor",
    "run",
    "runs",
    "show",
    "snapshot",
    "write_html",
]


def __getattr__(name: str) -> Any:
    where = WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Surface(types.ModuleType):
    """The package, keeping its functions when a submodule of the same name is imported (the import system
    would set `gputriage.api.run` to the module `run.py`)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in WHERE and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Surface
