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
from pathlib import Path

from gputriage.inworkload import allocator_counters, dynamo_counters, profiler_hook, stack_sampler

SITE = """\
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
"""


def is_python(argv: list[str]) -> bool:
    """A command the hook can profile: a Python interpreter, a script, or a distributed launcher."""
    exe = Path(argv[0]).name if argv else ""
    return bool(argv) and (
        exe.startswith("python")
        or argv[0] == sys.executable
        or argv[0].endswith(".py")
        or exe in profiler_hook.LAUNCHERS
    )


MPI_LAUNCHERS = ("mpirun", "mpiexec", "orterun", "prterun", "srun")


def launches_python(argv: list[str]) -> bool:
    """An MPI or Slurm launcher of Python ranks (`mpirun -np 4 python train.py`, `srun python train.py`): the ranks
    get the hooks (the stack sampler, the allocator's counters) through the environment it passes on; not profiled
    (its ranks have no torch RANK to name their traces by)."""
    exe = Path(argv[0]).name if argv else ""
    return exe in MPI_LAUNCHERS and any(is_python([a]) for a in argv[1:])


def prepare(
    argv: list[str], env: dict[str, str], steps: int, skip_s: float, gated: bool = False
) -> tuple[list[str], dict[str, str], Path]:
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
    (site / "sitecustomize.py").write_text(
        SITE.format(
            hook=str(Path(profiler_hook.__file__).resolve()),
            counters=str(Path(allocator_counters.__file__).resolve()),
            dynamo=str(Path(dynamo_counters.__file__).resolve()),
            stacks=str(Path(stack_sampler.__file__).resolve()),
        )
    )
    env = dict(env)
    env["PYTHONPATH"] = str(site) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env, folder


def open_gate(folder: Path, windows: int) -> None:
    """Ask a gated hook for this many profiled windows in all (every rank reads the same gate). What the hook
    wrote is read back by `trace.profile_files`."""
    tmp = folder / "gate.tmp"
    tmp.write_text(str(windows))
    os.replace(tmp, folder / "gate")


def clean(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
