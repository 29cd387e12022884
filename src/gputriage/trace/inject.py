"""`run --profile`: arm `trace.profiler_hook` inside a Python workload, then read back what it wrote.

gputriage puts a folder first on the workload's PYTHONPATH whose `sitecustomize` loads the hook
module, the allocator's counters (`gputriage.inworkload.allocator_counters`) and the stack sampler
(`gputriage.inworkload.stack_sampler`) by their paths in this installation (the workload's interpreter needs
nothing of gputriage's dependencies: they use the standard library only) and chains to the `sitecustomize` the
workload would otherwise have loaded. Without `--profile` (`prepare_hooks`) the same `sitecustomize` is given,
the profiler left unarmed: the counters and the stack sampler report all the same.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from gputriage.inworkload import allocator_counters, dynamo_counters, profiler_hook, stack_sampler

SITE = '''\
# written by gputriage run: load its profiler hook (armed by --profile), allocator counters and stack sampler, then
# this interpreter's own sitecustomize
import importlib.util as _u, os as _os, sys as _s
for _name, _path in (("gputriage_profiler_hook", {hook!r}), ("gputriage_allocator_counters", {counters!r}),
                     ("gputriage_dynamo_counters", {dynamo!r}), ("gputriage_stack_sampler", {stacks!r})):
    _spec = _u.spec_from_file_location(_name, _path)
    _m = _u.module_from_spec(_spec)
    _s.modules[_name] = _m
    _spec.loader.exec_module(_m)
    _m.main()
_here = _os.path.dirname(_os.path.abspath(__file__))
_s.path[:] = [p for p in _s.path if _os.path.abspath(p or ".") != _here]
_me = _s.modules.pop("sitecustomize", None)
try:
    import sitecustomize  # noqa: F401  the workload's own, if any
except ImportError:
    _s.modules["sitecustomize"] = _me
'''


def is_python(argv: list[str]) -> bool:
    """A command the hook can profile: a Python interpreter, a script, or a distributed launcher."""
    exe = Path(argv[0]).name if argv else ""
    return bool(argv) and (exe.startswith("python") or argv[0] == sys.executable or argv[0].endswith(".py")
                           or exe in profiler_hook.LAUNCHERS)


def prepare(argv: list[str], env: dict[str, str], steps: int, skip_s: float,
            gated: bool = False) -> tuple[list[str], dict[str, str], Path]:
    """Arrange for a Python command to profile itself; the trace lands in the returned folder. `gated`: a
    window starts only when `open_gate` asks for it."""
    if not is_python(argv):
        raise ValueError(f"--profile needs a Python command (python script.py ..., torchrun ...), not {argv[0]!r}")
    env, folder = prepare_hooks(env)
    env["GPUTRIAGE_TRACE_OUT"] = str(folder / "trace.json")
    env["GPUTRIAGE_PROFILE_STEPS"] = str(steps)
    env["GPUTRIAGE_PROFILE_SKIP_S"] = str(skip_s)
    if gated:
        env["GPUTRIAGE_PROFILE_GATE"] = str(folder / "gate")
    return argv, env, folder


def prepare_hooks(env: dict[str, str]) -> tuple[dict[str, str], Path]:
    """The environment that loads the hooks into a Python workload (the profiler left unarmed), and the folder to
    `clean` after it."""
    folder = Path(tempfile.mkdtemp(prefix="gputriage-profile-"))
    site = folder / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE.format(hook=str(Path(profiler_hook.__file__).resolve()),
                                                       counters=str(Path(allocator_counters.__file__).resolve()),
                                                       dynamo=str(Path(dynamo_counters.__file__).resolve()),
                                                       stacks=str(Path(stack_sampler.__file__).resolve())))
    env = dict(env)
    env["PYTHONPATH"] = str(site) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env, folder


def open_gate(folder: Path, windows: int) -> None:
    """Ask a gated hook for this many profiled windows in all (every rank reads the same gate)."""
    tmp = folder / "gate.tmp"
    tmp.write_text(str(windows))
    os.replace(tmp, folder / "gate")


@dataclass
class Written:
    """What the hook left: the traces (one, or one per rank of a distributed job), the log, and when
    it held the workload."""

    traces: list[Path] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    error: str | None = None
    window_s: list[float] | None = None  # unix seconds: the profiled window (the first rank's)
    held_s: list[float] | None = None  # from the start request to the end of the export
    held_all_s: list[list[float]] = field(default_factory=list)  # every window's, the last one's included
    kept: list[Path] = field(default_factory=list)

    @property
    def trace(self) -> Path | None:
        return self.traces[0] if self.traces else None


def _rank_of(path: Path) -> int:
    tail = path.name[len("trace.rank"):-len(".json")] if path.name.startswith("trace.rank") else ""
    return int(tail) if tail.isdigit() else -1


def read_back(folder: Path, keep: Path | None = None) -> Written:
    """The traces the workload wrote (copied to `keep` if asked: `NAME.rankN.json` per rank), and
    their logs."""
    traces = sorted(folder.glob("trace.rank*.json"), key=_rank_of) or [folder / "trace.json"]
    lines: list[str] = []
    for t in traces:
        log = t.with_name(t.name + ".log")
        ranked = len(traces) > 1 or t.name != "trace.json"
        for line in (log.read_text().strip().splitlines() if log.exists() else []):
            lines.append(f"rank {_rank_of(t)}: {line}" if ranked and not line.startswith("window ") else line)
    said = [line for line in lines if not line.startswith("window ")]
    # the last window: the one the trace holds (an earlier one without GPU work was profiled again)
    first_log = traces[0].with_name(traces[0].name + ".log")
    first = first_log.read_text().strip().splitlines() if first_log.exists() else []
    windows = [line for line in first if line.startswith("window ")]
    times = [float(x) for x in windows[-1].split()[1:5]] if windows else []
    written = [t for t in traces if t.exists()]
    if not written:
        errors = [line for line in said if "ERROR" in line]
        why = ("the profiler failed in the workload: " + errors[0].split("ERROR", 1)[1].strip() if errors else
               "no trace was written: the workload ended before the profiling window closed (on a GPU the "
               "profiler takes seconds to start), or never used CUDA")
        return Written([], said, why)
    out = Written(written, said)
    if keep is not None:
        for t in written:
            dest = keep if len(written) == 1 else keep.with_name(f"{keep.stem}.rank{_rank_of(t)}{keep.suffix}")
            shutil.copy(t, dest)
            out.kept.append(dest)
    if len(times) == 4:
        out.window_s, out.held_s = times[1:3], [times[0], times[3]]
    for w in windows:
        parts = w.split()[1:5]
        if len(parts) == 4:
            out.held_all_s.append([float(parts[0]), float(parts[3])])
    return out


def profiled_windows(folder: Path) -> list[tuple[float, float]]:
    """The windows profiled so far (unix s, from the first trace's log): start and stop of each."""
    logs = sorted(folder.glob("trace.rank*.json.log"), key=lambda p: _rank_of(p.with_suffix(""))) or \
        [folder / "trace.json.log"]
    try:
        lines = logs[0].read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        parts = line.split()
        if len(parts) == 5 and parts[0] == "window":
            try:
                out.append((float(parts[2]), float(parts[3])))
            except ValueError:
                continue
    return out


def clean(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
