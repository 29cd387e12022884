"""`run --profile`: profile a Python workload with torch.profiler without editing it.

gputriage puts a `sitecustomize` module first on the workload's PYTHONPATH. At interpreter start it
starts a background thread that waits until the workload has initialized CUDA, then `skip_s`
seconds more (warm-up), then profiles the process for `steps` optimizer steps (counted
through torch.optim's global step hook) or, for code without an optimizer, for a time window,
writes the Kineto trace, and stops. The trace is
written from the profiling thread, before interpreter shutdown, so a crash at exit cannot lose it.
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
import os, sys, threading, time

def _gputriage_profile():
    out = os.environ.get("GPUTRIAGE_TRACE_OUT")
    if not out:
        return
    skip = float(os.environ.get("GPUTRIAGE_PROFILE_SKIP_S", "3"))
    steps = int(os.environ.get("GPUTRIAGE_PROFILE_STEPS", "10"))
    window = float(os.environ.get("GPUTRIAGE_PROFILE_WINDOW_S", "0.5"))

    def worker():
        # wait (bounded) for the workload to use CUDA, then skip its warm-up
        deadline = time.time() + 300
        while time.time() < deadline:
            torch = sys.modules.get("torch")
            if torch is not None and torch.cuda.is_initialized():
                break
            time.sleep(0.1)
        else:
            return
        time.sleep(skip)
        from torch.profiler import ProfilerActivity, profile
        counter = {"n": 0}
        done = threading.Event()
        handle = None
        try:
            from torch.optim.optimizer import register_optimizer_step_post_hook

            def hook(*_a, **_k):
                counter["n"] += 1
                if counter["n"] >= steps:
                    done.set()
            handle = register_optimizer_step_post_hook(hook)
        except Exception:
            pass
        acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
        prof = profile(activities=acts, record_shapes=True)
        prof.start()
        t0 = time.time()
        # optimizer steps when there are any, else a time window; bounded either way
        while time.time() - t0 < 60:
            if done.wait(0.05):
                break
            if counter["n"] == 0 and time.time() - t0 >= window:
                break
        prof.stop()
        if handle is not None:
            handle.remove()
        tmp = out + ".tmp"
        prof.export_chrome_trace(tmp)
        os.replace(tmp, out)

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
