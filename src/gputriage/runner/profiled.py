"""What the injected profiler left in a `run --profile`: its traces read back, analysed and judged, with its
log and the windows it held the workload (`trace.inject`)."""

from __future__ import annotations

from pathlib import Path

from gputriage.diagnosis.trace.judge import judge
from gputriage.model.run import ProfileReport
from gputriage.trace import inject
from gputriage.trace.analyze import analyze_file
from gputriage.trace.load import TraceError

NOT_STEADY = ("not profiled: the run never reached a steady state the sampler could see (three 1 s windows with "
              "one verdict) before it ended")


def read_profile(folder: Path, keep: Path | None, mode: str = "on", asked: list[str] | None = None) -> ProfileReport:
    """The profile of a run (`mode` "auto" with nothing asked: the sampler decided, nothing to read). The
    folder is left for its owner to clean."""
    try:
        written = inject.read_back(folder, keep)
    except OSError as exc:  # --keep-trace's path cannot be written: the profile itself is not lost
        written = inject.read_back(folder, None)
        written.log.append(f"the trace could not be kept at {keep}: {exc.strerror or exc}")
    if mode == "auto" and not asked:  # the sampler decided: nothing to profile, nothing went wrong
        return ProfileReport(mode=mode)
    if not written.traces and mode == "on" and not asked:
        written.error = NOT_STEADY
    out = ProfileReport(log=written.log, error=written.error, window_s=written.window_s, held_s=written.held_s,
                        held_all_s=written.held_all_s, kept_trace=", ".join(str(k) for k in written.kept) or None,
                        mode=mode, asked=list(asked or []))
    if written.traces:
        ranks, problems = [], []
        for path in written.traces:
            try:
                ranks.append(analyze_file(path))
            except TraceError as exc:
                problems.append(str(exc))
        if ranks:
            out.trace = judge([str(p) for p in written.traces], ranks, problems)
        else:
            out.error = "; ".join(problems)
    return out
