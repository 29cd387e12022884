"""`run --profile`: profile a Python workload with torch.profiler without editing it.

gputriage puts a `sitecustomize` module first on the workload's PYTHONPATH. At interpreter start it
starts a background thread that waits until the workload has initialized CUDA, then `skip_s`
seconds more (warm-up), imports what the profiler needs (off the main thread) and asks for a
start. The main thread starts torch.profiler at its next optimizer step (a training loop, from its
third step on: the first steps load kernels and autotune), at a module forward when forwards have
run for a second without a step (inference), or — for plain tensor code where neither hook
fires, or once no hook has fired for 3 s — in a SIGUSR2 handler, deferred while the workload is
importing. The profile
covers at least `steps` optimizer steps and half a second (ten 5 ms steps are too few to judge:
the queue refilling after the profiler's start would weigh as much as the steps), at most a few
seconds, or, without an optimizer, a time window counted from when the profiler runs (on a GPU
its start waits seconds for CUPTI and the queued work); it is stopped the same way, or at exit,
and the Kineto trace written before interpreter shutdown, so a crash at exit cannot lose it. A
window that saw no GPU work (the workload was still compiling or loading) is profiled again, a
few times at most. What happened is logged next to the trace, with the times the profiler held
the workload. The variables that arm it are removed at start, so child processes (data loader
workers) are not profiled.
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
import atexit, os, signal, sys, threading, time

def _gputriage_profile():
    out = os.environ.pop("GPUTRIAGE_TRACE_OUT", None)  # popped: child processes do not profile
    if not out:
        return
    skip = float(os.environ.pop("GPUTRIAGE_PROFILE_SKIP_S", "2"))
    steps = int(os.environ.pop("GPUTRIAGE_PROFILE_STEPS", "10"))
    window = float(os.environ.pop("GPUTRIAGE_PROFILE_WINDOW_S", "0.5"))
    max_s = float(os.environ.pop("GPUTRIAGE_PROFILE_MAX_S", "3"))  # slow steps: stop after this long
    attempts = 3  # windows tried when one sees no GPU work
    warm_steps = 3  # optimizer steps a loop runs before the profiler may start at one
    cuda = os.environ.pop("GPUTRIAGE_PROFILE_CUDA", "1") == "1"
    st = {"want": None, "prof": None, "steps": 0, "steps_seen": 0, "stops": 0, "started": 0.0, "hooks": [],
          "seen_step": False, "acting": False, "first_forward": 0.0, "last_hook": 0.0, "want_t": 0.0}
    born = time.time()
    lock = threading.Lock()
    done = threading.Event()

    def note(msg):
        with open(out + ".log", "a") as fh:
            fh.write(msg + "\n")

    def ready():
        torch = sys.modules.get("torch")
        if torch is None or getattr(getattr(torch, "__spec__", None), "_initializing", True):
            return False  # not imported, or still importing
        return torch.cuda.is_initialized() if cuda else True

    def finish():
        for h in st["hooks"]:
            h.remove()
        done.set()

    def act(where):
        # start or stop the profiler, on the main thread, at a point where the workload is not importing
        if st["acting"]:  # re-entered by a signal or hook during start/stop: the outer call finishes it
            return
        st["acting"] = True
        try:
            with lock:
                want, st["want"] = st["want"], None
            if want == "start" and st["prof"] is None:
                t = time.time()
                try:
                    prof = st["make"]()
                    prof.start()  # seconds, the first time: CUPTI starts up
                except Exception as exc:
                    st["prof"] = False
                    note("ERROR start: %s: %s" % (type(exc).__name__, exc))
                    finish()
                    return
                st["started"], st["begin"] = time.time(), t
                st["prof"] = prof  # published once running: the window counts from here
                note("started at %s (+%.1f s, %.2f s to start)" % (where, t - born, st["started"] - t))
            elif want == "stop" and st["prof"]:
                prof, st["prof"] = st["prof"], False
                try:
                    prof.stop()
                    stopped = time.time()
                    prof.export_chrome_trace(out + ".tmp")
                    os.replace(out + ".tmp", out)
                    exported = time.time()
                    note("stopped at %s after %d optimizer steps (+%.1f s, %.2f s profiled)"
                         % (where, st["steps"], stopped - born, stopped - st["started"]))
                    # when the profiler held the workload: from asking for the start (CUPTI drains the GPU's
                    # queue first) to the end of the export; the profiled window inside it
                    note("window %.3f %.3f %.3f %.3f" % (st["begin"], st["started"], stopped, exported))
                except Exception as exc:
                    note("ERROR stop: %s: %s" % (type(exc).__name__, exc))
                    finish()
                st["stops"] += 1  # the trace is on disk (or failed): the worker may judge it
                if where == "exit":
                    finish()
        finally:
            st["acting"] = False

    def on_step(*_a, **_k):
        st["seen_step"], st["last_hook"] = True, time.time()
        st["steps_seen"] += 1
        if st["prof"]:
            st["steps"] += 1
            if st["steps"] >= steps and time.time() - st["started"] >= window:
                with lock:
                    st["want"] = st["want"] or "stop"
        # not at the first steps of a loop: allocator, cuBLAS handles and autotuning make them no steady state
        if st["want"] and (st["want"] == "stop" or st["steps_seen"] >= warm_steps):
            act("optimizer step %d" % st["steps_seen"])

    def on_forward(*_a, **_k):
        st["last_hook"] = time.time()
        if not st["first_forward"]:
            st["first_forward"] = st["last_hook"]
        want = st["want"]
        # a training loop starts and stops at step boundaries: start at a forward only when forwards have
        # run for a second without a step (inference), not at a training loop's first forward
        now = time.time()
        waited = min(now - st["want_t"], now - st["first_forward"])
        if want and not st["seen_step"] and (want == "stop" or waited > 1.0):
            act("module forward")

    def importing():
        # a module half-imported on this thread: starting the profiler now could import it again
        for mod in list(sys.modules.values()):
            if getattr(getattr(mod, "__spec__", None), "_initializing", False) is True:
                return True
        return False

    def on_signal(signum, frame):
        if st["want"] == "start" and st["seen_step"]:
            return  # a training loop: its optimizer step starts the profiler, past the first steps
        if st["want"] and not importing():
            act("signal")  # else the worker signals again a little later

    def saw_work():
        # GPU work; when CUDA is not profiled (a CPU-only workload), framework ops. Mapped, not read:
        # a trace can be hundreds of MB, and this runs inside the workload
        import mmap
        kinds = (b"kernel", b"gpu_memcpy", b"gpu_memset") if cuda else (b"cpu_op",)
        try:
            with open(out, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return any(data.find(b'"cat": "%s"' % k) >= 0 for k in kinds)
        except (OSError, ValueError):
            return True  # no trace to judge (or an empty one): nothing to try again

    def worker():
        for attempt in range(attempts):
            if not profile_once():
                return
            if st["prof"] is not False or attempt + 1 == attempts or saw_work():
                break
            note("no %s in the window (still compiling or loading?): profiling again in %.0f s"
                 % ("GPU work" if cuda else "framework op", skip))
            st["prof"], st["steps"] = None, 0
            time.sleep(skip)
        finish()

    def profile_once():
        """One window: wait for CUDA (the first time), ask for a start, then a stop. False: give up."""
        if "make" not in st:
            deadline = time.time() + 300
            while not ready():
                if time.time() > deadline:
                    return False
                time.sleep(0.1)
            time.sleep(skip)
        try:
            # import what the profiler needs here, off the main thread, so starting it later imports
            # little (nothing heavy such as torch._dynamo: that would hold the GIL for seconds)
            import torch
            import torch.profiler
            from torch.profiler import ProfilerActivity, profile
            acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
            st["make"] = lambda: profile(activities=acts, record_shapes=True)
            from torch.optim.optimizer import register_optimizer_step_post_hook
            from torch.nn.modules.module import register_module_forward_pre_hook
            if not st["hooks"]:
                st["hooks"] = [register_optimizer_step_post_hook(on_step),
                               register_module_forward_pre_hook(on_forward)]
        except Exception as exc:
            note("ERROR setup: %s: %s" % (type(exc).__name__, exc))
            return False
        for want in ("start", "stop"):
            stops = st["stops"]
            with lock:
                st["want"], st["want_t"] = want, time.time()
            t0 = time.time()
            while st["want"] == want and time.time() - t0 < (120 if st["seen_step"] else 30):
                # a hook acts at the next step or forward; where none fires (plain tensor code, a CUDA
                # graph replayed), a signal handler does (retried while it defers). A start waits 3 s
                # without any hook first: a loop's first step can take seconds, and a signal would start
                # the profiler inside it
                hooks_fire = st["first_forward"] or st["seen_step"]
                if want == "start":
                    fire = time.time() - max(t0, st["last_hook"]) > (3.0 if hooks_fire else 0.5)
                else:
                    fire = time.time() - t0 > (3.0 if hooks_fire else 0.0)
                if fire:
                    os.kill(os.getpid(), signal.SIGUSR2)
                    time.sleep(0.2)
                else:
                    time.sleep(0.01)
            if st["want"] == want:
                note("ERROR %s: the workload never reached a point where the profiler could %s" % (want, want))
                return False
            if want == "stop":  # the main thread took the request: wait for the export before judging it
                t2 = time.time()
                while st["stops"] == stops and time.time() - t2 < 120:
                    time.sleep(0.02)
            if want == "start":
                t1 = time.time()
                while time.time() - t1 < 60 and not done.is_set():
                    if st["prof"] is False:
                        return False
                    spent = time.time() - st["started"] if st["prof"] else 0.0
                    if (st["steps"] >= steps and spent >= window) or spent >= (max_s if st["seen_step"] else window):
                        break
                    time.sleep(0.02)
                if done.is_set():
                    return False
        return True

    def on_exit():
        # the workload ended inside the window: keep what was profiled
        if st["prof"]:
            with lock:
                st["want"] = "stop"
            act("exit")

    atexit.register(on_exit)
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
    log = folder / "trace.json.log"
    lines = log.read_text().strip().splitlines() if log.exists() else []
    said = [line for line in lines if not line.startswith("window ")]
    # the last window: the one the trace holds (an earlier one without GPU work was profiled again)
    windows = [line for line in lines if line.startswith("window ")]
    times = [float(x) for x in windows[-1].split()[1:5]] if windows else None
    try:
        if not trace.exists():
            errors = [line for line in said if line.startswith("ERROR")]
            if errors:
                return {"error": "the profiler failed in the workload: " + errors[0][6:], "profile_log": said}, []
            return {"error": "no trace was written: the workload ended before the profiling window, or never "
                             "used CUDA (try a smaller --profile-skip)", "profile_log": said}, []
        if keep is not None:
            shutil.copy(trace, keep)
        report, found = analyze([trace])
        report["kept_trace"] = str(keep) if keep is not None else None
        report["profile_log"] = said
        if times and len(times) == 4:  # unix seconds, to set against the samples
            report["profile_window_s"] = times[1:3]  # the profiled window
            report["profiler_held_s"] = [times[0], times[3]]  # start-up drain to end of export
        return report, found
    except TraceError as exc:
        return {"error": str(exc), "profile_log": said}, []
    finally:
        shutil.rmtree(folder, ignore_errors=True)
