"""`run --profile`: profile a Python workload with torch.profiler without editing it.

gputriage puts a `sitecustomize` module first on the workload's PYTHONPATH. At interpreter start it
starts a background thread that waits until the workload has initialized CUDA, then `skip_s`
seconds more (warm-up), then signals the process (SIGUSR2): the handler, which Python runs in the
main thread, starts torch.profiler there. The profile covers `steps` optimizer steps (counted
through torch.optim's global step hook) or, for code without an optimizer, a time window; a
second signal stops it and writes the Kineto trace — before interpreter shutdown, so a crash at
exit cannot lose it. The variables that arm it are removed at start, so child processes (data
loader workers) are not profiled.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from gputriage.model.finding import Finding

SITE = r'''
import os, signal, sys, threading, time

def _gputriage_profile():
    out = os.environ.pop("GPUTRIAGE_TRACE_OUT", None)  # popped: child processes do not profile
    if not out:
        return
    skip = float(os.environ.pop("GPUTRIAGE_PROFILE_SKIP_S", "2"))
    steps = int(os.environ.pop("GPUTRIAGE_PROFILE_STEPS", "10"))
    window = float(os.environ.pop("GPUTRIAGE_PROFILE_WINDOW_S", "0.5"))
    cuda = os.environ.pop("GPUTRIAGE_PROFILE_CUDA", "1") == "1"
    state = {"prof": None, "steps": 0, "done": threading.Event(), "hook": None}

    def ready():
        torch = sys.modules.get("torch")
        if torch is None or getattr(getattr(torch, "__spec__", None), "_initializing", True):
            return False  # not imported, or still importing
        return torch.cuda.is_initialized() if cuda else True

    def on_signal(signum, frame):
        # runs in the main thread, between two bytecodes of the workload
        from torch.profiler import ProfilerActivity, profile
        if state["prof"] is None:
            acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
            state["prof"] = profile(activities=acts, record_shapes=True)
            state["prof"].start()
            try:
                from torch.optim.optimizer import register_optimizer_step_post_hook

                def hook(*_a, **_k):
                    state["steps"] += 1
                    if state["steps"] >= steps:
                        state["done"].set()
                state["hook"] = register_optimizer_step_post_hook(hook)
            except Exception:
                pass
        else:
            prof, state["prof"] = state["prof"], False
            prof.stop()
            if state["hook"] is not None:
                state["hook"].remove()
            prof.export_chrome_trace(out + ".tmp")
            os.replace(out + ".tmp", out)

    def worker():
        deadline = time.time() + 300
        while not ready():
            if time.time() > deadline:
                return
            time.sleep(0.1)
        time.sleep(skip)
        os.kill(os.getpid(), signal.SIGUSR2)
        t0 = time.time()
        while time.time() - t0 < 60:
            if state["done"].wait(0.05):
                break
            if state["steps"] == 0 and state["prof"] and time.time() - t0 >= window:
                break
        if state["prof"]:
            os.kill(os.getpid(), signal.SIGUSR2)

    signal.signal(signal.SIGUSR2, on_signal)
    threading.Thread(target=worker, name="gputriage-profiler", daemon=True).start()

_gputriage_profile()
'''


def prepare(argv: list[str], env: dict[str, str], steps: int, skip_s: float) -> tuple[list[str], dict[str, str], Path]:
    """Arrange for a Python command to profile itself; the trace lands in the returned folder."""
    exe = Path(argv[0]).name
    if not (exe.startswith("python") or argv[0] == sys.executable or argv[0].endswith(".py")):
        raise ValueError(f"--profile needs a Python command (python script.py ...), not {argv[0]!r}")
    if argv[0].endswith(".py"):
        argv = [sys.executable] + argv
    folder = Path(tempfile.mkdtemp(prefix="gputriage-profile-"))
    site = folder / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE)
    env = dict(env)
    env["PYTHONPATH"] = str(site) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["GPUTRIAGE_TRACE_OUT"] = str(folder / "trace.json")
    env["GPUTRIAGE_PROFILE_STEPS"] = str(steps)
    env["GPUTRIAGE_PROFILE_SKIP_S"] = str(skip_s)
    return argv, env, folder


def analyze_dir(folder: Path, keep: Path | None = None) -> tuple[dict[str, Any] | None, list[Finding]]:
    """Analyze the trace the workload wrote; None when it wrote none (it ended first, or no CUDA)."""
    from gputriage.trace.analyze import analyze
    from gputriage.trace.load import TraceError

    trace = folder / "trace.json"
    try:
        if not trace.exists():
            return {"error": "no trace was written: the workload ended before the profiling window, or never "
                             "used CUDA (try a smaller --profile-skip)"}, []
        if keep is not None:
            shutil.copy(trace, keep)
        report, found = analyze([trace])
        report["kept_trace"] = str(keep) if keep is not None else None
        return report, found
    except TraceError as exc:
        return {"error": str(exc)}, []
    finally:
        shutil.rmtree(folder, ignore_errors=True)
