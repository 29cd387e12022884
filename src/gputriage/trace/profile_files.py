"""What the injected profiler (`inworkload.profiler_hook`) leaves in its folder, read back: each window's traces
(one per rank of a distributed job), its log, and when it held the workload.

Files, for the first rank (or the only process): `trace.json` (window 1), `trace.w2.json` (window 2), ...; the
log `trace.json.log` (what happened, and `window B S E X K` for each window exported: the start begun, the
profiler running, stopped, the export done, the window's number); the holds `trace.json.holds` (`K EVENT T`,
written as they happen: `asked`, `began`, `started`, `stopping`, `stopped`, `exported`, `released`). A rank N of
a distributed job writes `trace.rankN.json`, `trace.rankN.w2.json`, ... and its own log and holds.

A hold runs from `began` (the main thread starts the profiler: CUPTI starts up, drains the GPU's queue) to
`exported` or `released` (a start or an export that failed); one that never ended (the workload ended or was
killed inside it, a start that never returned) runs to the end of the run. The time between `asked` and `began`
is the workload's own: it runs on until the main thread reaches a step, a forward or the signal.
"""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from gputriage.inworkload.profiler_hook import window_path

TRACE_NAME = re.compile(r"^trace(?:\.rank(\d+))?(?:\.w(\d+))?\.json$")
ENDS = ("exported", "released")


@dataclass
class Hold:
    """A time the profiler held the workload (unix s); `end` is how it ended: exported, released, or open."""

    window: int
    start_s: float
    end_s: float
    end: str
    started_s: float | None = None  # when the profiler was running (None: it never started)


@dataclass
class WindowWritten:
    """One window exported: its traces (every rank's), its times (the first rank's) and where they were kept."""

    index: int
    traces: list[Path]
    window_s: list[float] | None = None  # the profiler running: [started, stopped]
    held_s: list[float] | None = None  # [began, exported]
    kept: list[Path] = field(default_factory=list)


@dataclass
class Written:
    """What the hook left: the traces of the last window that wrote one (or one per rank), the log, every hold, and
    every window."""

    traces: list[Path] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    error: str | None = None
    window_s: list[float] | None = None  # unix seconds: the profiled window (the first rank's)
    held_s: list[float] | None = None  # from the start to the end of the export
    held_all_s: list[list[float]] = field(default_factory=list)  # every hold, with or without a trace
    kept: list[Path] = field(default_factory=list)
    windows: list[WindowWritten] = field(default_factory=list)
    holds: list[Hold] = field(default_factory=list)

    @property
    def trace(self) -> Path | None:
        return self.traces[0] if self.traces else None


def ranks(folder: Path) -> list[int]:
    """The ranks that wrote anything (-1: a process that is no rank of a distributed job)."""
    found: set[int] = set()
    for p in folder.glob("trace*.json*"):
        m = TRACE_NAME.match(p.name.split(".json")[0] + ".json")
        if m:
            found.add(int(m.group(1)) if m.group(1) else -1)
    return sorted(found) or [-1]


def first_out(folder: Path, rank: int) -> Path:
    """The path a rank's hook was given (its first window's trace; its log and holds beside it)."""
    return folder / ("trace.json" if rank < 0 else f"trace.rank{rank}.json")


def read_holds(path: Path, ended_s: float | None = None) -> list[Hold]:
    """The holds written in a `.holds` file, in order; one still open ends at `ended_s` (default: now)."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    out: list[Hold] = []
    open_: Hold | None = None
    for line in lines:
        parts = line.split()
        if len(parts) != 3 or not parts[0].isdigit():
            continue
        try:
            k, event, t = int(parts[0]), parts[1], float(parts[2])
        except ValueError:
            continue
        if event == "began":
            if open_ is not None:  # a hold that never ended, then another: the first ended when this began
                open_.end_s, open_.end = t, "open"
                out.append(open_)
            open_ = Hold(k, t, t, "open")
        elif open_ is not None and event == "started":
            open_.started_s = t
        elif open_ is not None and event in ENDS:
            open_.end_s, open_.end = max(t, open_.start_s), event
            out.append(open_)
            open_ = None
    if open_ is not None:
        open_.end_s = max(open_.start_s, time.time() if ended_s is None else ended_s)
        out.append(open_)
    return out


def window_lines(lines: list[str]) -> dict[int, list[float]]:
    """Each window's times from its log (`window B S E X [K]`): the last attempt of each window."""
    out: dict[int, list[float]] = {}
    for line in lines:
        parts = line.split()
        if parts[:1] != ["window"] or len(parts) not in (5, 6):
            continue
        try:
            times = [float(x) for x in parts[1:5]]
            k = int(parts[5]) if len(parts) == 6 else 1
        except ValueError:
            continue
        out[k] = times
    return out


def profiled_windows(folder: Path) -> list[tuple[int, float, float]]:
    """The windows profiled so far, in the order they were (a window without GPU work, profiled again, once per
    attempt): number, start and stop (unix s), from the first rank's log."""
    first = first_out(folder, ranks(folder)[0])
    try:
        lines = first.with_name(first.name + ".log").read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        one = window_lines([line])
        out += [(k, t[1], t[2]) for k, t in one.items()]
    return out


def current_holds(folder: Path) -> list[tuple[float, float]]:
    """Every hold so far (unix s), one still running to infinity: what a live judge must leave out."""
    first = first_out(folder, ranks(folder)[0])
    return [
        (h.start_s, float("inf") if h.end == "open" else h.end_s)
        for h in read_holds(first.with_name(first.name + ".holds"), ended_s=0.0)
    ]


def _kept_name(keep: Path, window: int, rank: int, ranked: bool) -> Path:
    tail = (f".w{window}" if window > 1 else "") + (f".rank{rank}" if ranked else "")
    return keep.with_name(f"{keep.stem}{tail}{keep.suffix}")


def _no_trace(said: list[str], holds: list[Hold]) -> str:
    errors = [line for line in said if "ERROR" in line]
    if errors:
        return "the profiler failed in the workload: " + errors[0].split("ERROR", 1)[1].strip()
    last = holds[-1] if holds else None
    if last is not None and last.end == "open":
        doing = "still starting (CUPTI)" if last.started_s is None else "profiling or exporting"
        return (
            f"no trace was written: the workload ended while the profiler held it ({doing}, "
            f"{last.end_s - last.start_s:.1f} s after its start began)"
        )
    return (
        "no trace was written: the workload ended before the profiling window closed (on a GPU the profiler "
        "takes seconds to start), or never used CUDA"
    )


def read_back(folder: Path, keep: Path | None = None, ended_s: float | None = None) -> Written:
    """The traces the workload wrote, window by window (copied to `keep` if asked: `NAME.json`, `NAME.w2.json`, ...,
    `NAME.rankN.json` per rank), their logs, and every hold (one still open ends at `ended_s`, default now)."""
    rs = ranks(folder)
    ranked = rs != [-1]
    said: list[str] = []
    for r in rs:
        log = first_out(folder, r).with_name(first_out(folder, r).name + ".log")
        for line in log.read_text().strip().splitlines() if log.exists() else []:
            if not line.startswith("window "):
                said.append(f"rank {r}: {line}" if ranked else line)
    first = first_out(folder, rs[0])
    first_log = first.with_name(first.name + ".log")
    times = window_lines(first_log.read_text().splitlines() if first_log.exists() else [])
    holds = read_holds(first.with_name(first.name + ".holds"), ended_s)
    if not holds:  # a hook that wrote no holds: its windows' own
        holds = [Hold(k, t[0], t[3], "exported", t[1]) for k, t in sorted(times.items())]
    numbers = sorted(
        set(times) | {int(m.group(2) or 1) for p in folder.glob("trace*.json") if (m := TRACE_NAME.match(p.name))}
    )
    windows = []
    for k in numbers:
        traces = [Path(window_path(str(first_out(folder, r)), k)) for r in rs]
        t = times.get(k)
        windows.append(
            WindowWritten(k, [p for p in traces if p.exists()], t[1:3] if t else None, [t[0], t[3]] if t else None)
        )
    out = Written(log=said, held_all_s=[[h.start_s, h.end_s] for h in holds], windows=windows, holds=holds)
    written = [w for w in windows if w.traces]
    if not written:
        out.error = _no_trace(said, holds)
        return out
    last = written[-1]
    out.traces, out.window_s, out.held_s = last.traces, last.window_s, last.held_s
    if keep is not None:
        for w in written:
            for path in w.traces:
                m = TRACE_NAME.match(path.name)
                dest = _kept_name(keep, w.index, int(m.group(1)) if m and m.group(1) else -1, len(w.traces) > 1)
                shutil.copy(path, dest)
                w.kept.append(dest)
        out.kept = last.kept
    return out
