"""What the injected profiler left in a `run --profile`: every window's traces read back, analysed and judged, with
its log and the times it held the workload (`trace.profile_files`), even where no trace came of a hold.

The run's verdict is merged with one trace: the last window asked for the steady state (the first, or the one
profiled again); windows taken in a new regime or asked by a user are listed with their own trace verdicts
(`ProfileReport.windows`), each placed in its regime by the judge."""

from __future__ import annotations

from pathlib import Path

from gputriage.diagnosis.trace.judge import judge
from gputriage.diagnosis.verify import Context
from gputriage.model.run import ProfileReport, ProfileWindow
from gputriage.model.trace import TraceReport
from gputriage.runner.gate_keeper import GateKeeper
from gputriage.trace.analyze import analyze_file
from gputriage.trace.load import TraceError
from gputriage.trace.profile_files import Written, read_back

NOT_STEADY = (
    "not profiled: the run never reached a steady state the sampler could see (three 1 s windows with "
    "one verdict) before it ended"
)


def _analysed(traces: list[Path]) -> tuple[TraceReport | None, str | None]:
    ranks, problems = [], []
    for path in traces:
        try:
            ranks.append(analyze_file(path))
        except TraceError as exc:
            problems.append(str(exc))
    if not ranks:
        return None, "; ".join(problems) or None
    # the run's judge writes the verifying commands: it knows the workload's command line
    return judge([str(p) for p in traces], ranks, problems, Context("run")), None


def _read(folder: Path, keep: Path | None, ended_s: float | None) -> Written:
    try:
        return read_back(folder, keep, ended_s)
    except OSError as exc:  # --keep-trace's path cannot be written: the profile itself is not lost
        written = read_back(folder, None, ended_s)
        written.log.append(f"the trace could not be kept at {keep}: {exc.strerror or exc}")
        return written


def read_profile(
    folder: Path,
    keep: Path | None,
    mode: str = "on",
    asked: list[str] | None = None,
    keeper: GateKeeper | None = None,
    ended_s: float | None = None,
) -> ProfileReport:
    """The profile of a run (`mode` "auto" with nothing asked: the sampler decided, nothing to read, unless the
    profiler held the workload all the same). `keeper`: the gate's keeper, which knows why each window was asked
    and where a user asked for its trace. The folder is left for its owner to clean."""
    gate = keeper.gate if keeper is not None else None
    asked = list(gate.reasons if gate is not None else asked or [])
    kinds = gate.kinds if gate is not None else []
    written = _read(folder, keep, ended_s)
    if gate is not None:
        written.log += gate.notes
    if mode == "auto" and not asked and not written.held_all_s:  # the sampler decided: nothing went wrong
        return ProfileReport(mode=mode, log=list(gate.notes) if gate is not None else [])  # requests answered
    if not written.traces and mode == "on" and not asked:
        written.error = NOT_STEADY
    out = ProfileReport(log=written.log, error=written.error, held_all_s=written.held_all_s, mode=mode, asked=asked)
    outs = keeper.outs if keeper is not None else {}
    steady = [
        w
        for w in written.windows
        if w.traces and (kinds[w.index - 1] if w.index <= len(kinds) else "steady") == "steady"
    ]
    main = steady[-1] if steady else None
    for w in written.windows:
        kind = kinds[w.index - 1] if w.index <= len(kinds) else "steady"
        kept = outs.get(w.index) or ", ".join(str(k) for k in w.kept) or None
        pw = ProfileWindow(
            index=w.index,
            kind=kind,
            why=asked[w.index - 1] if w.index <= len(asked) else "",
            window_s=w.window_s,
            held_s=w.held_s,
            trace_file=kept,
            used=w is main,
        )
        trace, error = _analysed(w.traces) if w.traces else (None, "no trace was written")
        if trace is not None and trace.verdict is not None and trace.verdict.bottleneck is not None:
            v = trace.verdict
            pw.bottleneck, pw.confidence, pw.gpu_idle_pct = v.bottleneck, v.confidence, v.gpu_idle_pct
        pw.error = error
        out.windows.append(pw)
        if w is main:
            out.trace, out.window_s, out.held_s, out.kept_trace = trace, w.window_s, w.held_s, kept
            out.error = error if trace is None else None
    if main is None and written.windows and not out.error and any(w.traces for w in written.windows):
        out.log.append(
            "no window was asked for the steady state: the sampler's verdict stands; the windows profiled "
            "are listed with their own verdicts"
        )
    return out
