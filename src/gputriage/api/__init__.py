"""The library API: everything the `gputriage` command does, as functions that return typed
reports (msgspec Structs: `msgspec.json.encode(report)` is what `--json` prints).

    import gputriage
    report = gputriage.check()                        # CheckReport: findings in triage order
    report = gputriage.analyze_trace(["trace.json"])  # TraceReport
    report = gputriage.run(["python", "train.py"])    # RunReport: the workload's verdict
    with gputriage.monitor() as m:                    # your own code, sampled
        train()
    print(m.report.verdict.bottleneck)
    gputriage.write_html(report, "report.html")       # any report as one self-contained page

Nothing here prints; errors the caller can act on are raised as `GputriageError` subclasses.
"""

from gputriage.api._common import GputriageError, WorkloadError
from gputriage.api.bench import bench
from gputriage.api.check import catalog, check, snapshot
from gputriage.api.checklist import checklist
from gputriage.api.monitor import Monitor, monitor
from gputriage.api.report import write_html
from gputriage.api.run import PROFILE_MODES, run, runs, show
from gputriage.api.trace import analyze_trace

__all__ = ["PROFILE_MODES", "GputriageError", "Monitor", "WorkloadError", "analyze_trace", "bench", "catalog",
           "check", "checklist", "monitor", "run", "runs", "show", "snapshot", "write_html"]
