"""The profiler `run --profile` starts inside a Python workload, without editing it (standard library only; loaded
at interpreter start by the `sitecustomize` `trace.inject` puts first on its PYTHONPATH).

A thread waits for CUDA and `skip_s` of warm-up, imports what the profiler needs off the main thread, and asks for
a start; the main thread starts torch.profiler at its next optimizer step (from a loop's third), at a module forward
(inference), or in a SIGUSR2 handler (never where the workload has its own). A window covers at least `steps` steps
and `window_s`, at most `max_s` counted from when the profiler runs, and is written before shutdown; one that saw no
GPU work is tried again. When the profiler held the workload is written as it happens (`OUT.holds`: began, started,
stopping, stopped, exported or released), so a start that stalls it is known even when no trace comes of it. Child
processes are not profiled, except a distributed launcher's ranks (`trace.rankN.json`); the hooks return at once
while `torch.compile` traces them. Gated (`GPUTRIAGE_PROFILE_GATE`), a window starts only when the sampler asks
(steady state, a new regime, a request from another terminal); the hook stays armed, window K in its own file.
Whether it could start now is written as it changes (`OUT.state`: no_torch, importing, no_cuda, ready): a request to
a workload that has not used CUDA is answered at once.
"""

from __future__ import annotations

import atexit
import contextlib
import mmap
import os
import signal
import sys
import threading
import time
from typing import Any, Callable, Optional

ATTEMPTS = 3  # windows tried when one sees no GPU work
WARM_STEPS = 3  # optimizer steps a loop runs before the profiler may start at one
CUDA_WAIT_S = 300.0  # how long to wait for the workload to initialize CUDA
QUIET_BEFORE_SIGNAL_S = 3.0  # a start by signal waits this long without any hook (a loop's first step is slow)
RANK_ALIGN_S = 2.0  # the ranks of a distributed job ask for a start at the same multiple of this (wall clock)


class Profiler:
    """The state machine: a worker thread asks ("want"), the workload's main thread acts."""

    def __init__(
        self,
        out: str,
        skip_s: float = 2.0,
        steps: int = 10,
        window_s: float = 0.5,
        max_s: float = 3.0,
        cuda: bool = True,
        clock: Callable[[], float] = time.time,
        ranked: bool = False,
        gate: Optional[str] = None,
    ) -> None:
        """`ranked`: a rank of a distributed job (its ranks wait on each other): each asks for its start at the same
        instant (a multiple of RANK_ALIGN_S) and starts at its next optimizer step, not by signal while it sets up."""
        self.out, self.skip_s, self.steps, self.ranked, self.gate = out, skip_s, steps, ranked, gate
        self.window_s, self.max_s, self.cuda, self.clock = window_s, max_s, cuda, clock
        self.want: Optional[str] = None
        self.prof: Any = None  # None: not started; False: stopped or failed; else the running profiler
        self.make: Optional[Callable[[], Any]] = None
        self.steps_profiled = self.steps_seen = self.stops = 0
        self.want_t = self.started = self.begin = 0.0
        self.hooks: list[Any] = []
        self.compiling: Callable[[], bool] = lambda: False  # torch.compiler.is_compiling once set up (a flag read)
        self.seen_step = self.acting = False
        self.signal_taken = False  # the workload replaced the SIGUSR2 handler
        self.first_forward = self.last_hook = 0.0
        self.born, self.state = clock(), ""  # state: what `ready` last wrote
        self.window = 1  # the window asked for now; window K is written to window_path(out, K)
        self.lock, self.done = threading.Lock(), threading.Event()

    def path(self) -> str:  # this window's trace
        return window_path(self.out, self.window)

    # --- what the main thread does -------------------------------------------------------------
    def note(self, msg: str, suffix: str = ".log") -> None:
        with contextlib.suppress(OSError), open(self.out + suffix, "a") as fh:  # OSError: the folder is gone
            fh.write(msg + "\n")

    def mark(self, event: str, t: Optional[float] = None, window: int = 0) -> None:
        """A moment of the profiler's hold on the workload, written as it happens (`OUT.holds`)."""
        self.note("%d %s %.3f" % (window or self.window, event, self.clock() if t is None else t), ".holds")

    def finish(self) -> None:
        for h in self.hooks:
            h.remove()
        self.done.set()

    def act(self, where: str) -> None:
        """Start or stop the profiler, on the main thread, at a point where the workload is not importing."""
        if self.acting:  # re-entered by a signal or hook during start/stop: the outer call finishes it
            return
        self.acting = True
        try:
            with self.lock:
                want, self.want = self.want, None
            if want == "start" and self.prof is None:
                self._start(where)
            elif want == "stop" and self.prof:
                self._stop(where)
        finally:
            self.acting = False

    def _start(self, where: str) -> None:
        t = self.clock()
        self.mark("began", t)  # before CUPTI starts: a start that never returns still shows its hold
        try:
            assert self.make is not None
            prof = self.make()
            prof.start()  # seconds, the first time: CUPTI starts up
        except Exception as exc:
            self.prof = False
            self.note("ERROR start: %s: %s" % (type(exc).__name__, exc))
            self.mark("released")
            self.finish()
            return
        self.started, self.begin = self.clock(), t
        self.mark("started", self.started)
        self.prof = prof  # published once running: the window counts from here
        self.note("started at %s (+%.1f s, %.2f s to start)" % (where, t - self.born, self.started - t))

    def _stop(self, where: str) -> None:
        prof, self.prof, k = self.prof, False, self.window
        path = self.path()
        self.mark("stopping", None, k)
        try:
            prof.stop()
            self.mark("stopped", stopped := self.clock(), k)
            prof.export_chrome_trace(path + ".tmp")
            os.replace(path + ".tmp", path)
            self.mark("exported", exported := self.clock(), k)
            self.note(
                "stopped at %s after %d optimizer steps (+%.1f s, %.2f s profiled)"
                % (where, self.steps_profiled, stopped - self.born, stopped - self.started)
            )
            # the hold (from the start, when CUPTI drains the GPU's queue, to the export's end), the window inside
            self.note("window %.3f %.3f %.3f %.3f %d" % (self.begin, self.started, stopped, exported, k))
        except Exception as exc:
            self.note("ERROR stop: %s: %s" % (type(exc).__name__, exc))
            self.mark("released", None, k)
            self.finish()
        self.stops += 1  # the trace is on disk (or failed): the worker may judge it
        if where == "exit":
            self.finish()

    def on_step(self, *_a: Any, **_k: Any) -> None:
        if self.compiling():  # traced by torch.compile, which sees a constant here and returns: no graph break
            return
        self.seen_step, self.last_hook = True, self.clock()
        self.steps_seen += 1
        if self.prof:
            self.steps_profiled += 1
            if self.steps_profiled >= self.steps and self.clock() - self.started >= self.window_s:
                with self.lock:
                    self.want = self.want or "stop"
        # not at the first steps of a loop: allocator, cuBLAS handles and autotuning make them no steady state
        if self.want and (self.want == "stop" or self.steps_seen >= WARM_STEPS):
            self.act("optimizer step %d" % self.steps_seen)

    def on_forward(self, *_a: Any, **_k: Any) -> None:
        if self.compiling():  # see on_step: the hook would break every graph compiled while it is armed
            return
        now = self.last_hook = self.clock()
        if not self.first_forward:
            self.first_forward = now
        # a training loop starts at a step: at a forward only after a second of forwards without a step (inference)
        waited = min(now - self.want_t, now - self.first_forward)
        if self.want and not self.seen_step and (self.want == "stop" or waited > 1.0):
            self.act("module forward")

    def on_signal(self, signum: int, frame: Any) -> None:
        if self.want == "start" and self.seen_step:
            return  # a training loop: its optimizer step starts the profiler, past the first steps
        if self.want and not unsafe_to_start(frame):
            self.act("signal")  # else the worker signals again a little later

    def owns_signal(self) -> bool:
        """SIGUSR2 still reaches this profiler: the workload has not installed a handler of its own."""
        return signal.getsignal(signal.SIGUSR2) == self.on_signal

    def on_exit(self) -> None:
        """The workload ended inside the window: keep what was profiled."""
        if self.prof:
            with self.lock:
                self.want = "stop"
            self.act("exit")

    # --- what the worker thread does -----------------------------------------------------------
    def ready(self) -> bool:
        """Whether the profiler can start: set up, or torch imported and CUDA initialized if profiled (`OUT.state`)."""
        torch: Any = sys.modules.get("torch")
        state = "ready" if self.make is not None else "no_torch" if torch is None else "importing"
        if state == "importing" and not getattr(getattr(torch, "__spec__", None), "_initializing", True):
            state = "ready" if not self.cuda or torch.cuda.is_initialized() else "no_cuda"
        if state != self.state:
            self.state = state
            self.note(state, ".state")
        return state == "ready"

    def setup(self) -> bool:
        """Import what the profiler needs off the main thread (not torch._dynamo: seconds of GIL); hook the loop."""
        try:
            import torch
            from torch.nn.modules.module import register_module_forward_pre_hook
            from torch.optim.optimizer import register_optimizer_step_post_hook
            from torch.profiler import ProfilerActivity, profile

            compiler = getattr(torch, "compiler", None)
            self.compiling = getattr(compiler, "is_compiling", None) or self.compiling
            acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
            self.make = lambda: profile(activities=acts, record_shapes=True)
            dynamo = sys.modules.get("gputriage_dynamo_counters") or sys.modules.get(f"{__package__}.dynamo_counters")
            if not self.hooks:
                if dynamo is not None:  # kept off torch.compile before they can run in a compiled call
                    dynamo.skip_module(__name__)
                self.hooks = [
                    register_optimizer_step_post_hook(self.on_step),
                    register_module_forward_pre_hook(self.on_forward),
                ]
        except Exception as exc:
            self.note("ERROR setup: %s: %s" % (type(exc).__name__, exc))
            return False
        return True

    def saw_work(self) -> bool:
        """GPU work in the trace (framework ops when CUDA is not profiled). Mapped, not read: a trace can be
        hundreds of MB, and this runs inside the workload."""
        kinds = (b"kernel", b"gpu_memcpy", b"gpu_memset") if self.cuda else (b"cpu_op",)
        try:
            with open(self.path(), "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return any(data.find(b'"cat": "%s"' % k) >= 0 for k in kinds)
        except (OSError, ValueError):
            return True  # no trace to judge (or an empty one): nothing to try again

    def worker(self) -> None:
        """Each window asked for, in turn (ungated: one), for as long as the workload runs."""
        while self.wait_gate(self.window) and self.profile_window():
            self.window += 1
            self.prof, self.steps_profiled = None, 0  # re-armed: gputriage may ask for another window
        self.finish()

    def profile_window(self) -> bool:
        """One window asked for, profiled again (ATTEMPTS in all) while it sees no GPU work. False: give up."""
        for attempt in range(ATTEMPTS):
            if not self.profile_once() or self.prof is not False:
                return False  # failed, or the workload ended inside the window
            if attempt + 1 == ATTEMPTS or self.saw_work():
                return True
            self.note(
                "no %s in the window (still compiling or loading?): profiling again in %.0f s"
                % ("GPU work" if self.cuda else "framework op", self.skip_s)
            )
            self.prof, self.steps_profiled = None, 0
            time.sleep(self.skip_s)
        return True

    def wait_gate(self, window: int) -> bool:
        """Whether to profile this window: ungated, the first only; gated, once gputriage has asked for this many
        windows (waiting for as long as the workload runs)."""
        if not self.gate:
            return window == 1
        while not self.done.is_set():
            self.ready()  # said while waiting: a request is answered at once where there is nothing to profile
            with contextlib.suppress(OSError, ValueError), open(self.gate) as fh:
                if int(fh.read().strip() or 0) >= window:
                    return True
            time.sleep(0.1)
        return False

    def prepare(self) -> bool:
        """Wait for CUDA and the warm-up, then set up (once). False: give up."""
        if self.make is not None:
            return True
        deadline = time.time() + CUDA_WAIT_S
        while not self.ready():
            if time.time() > deadline:
                return False
            time.sleep(0.1)
        if not self.gate:  # gated, gputriage asks once the run is steady: the warm-up is behind it
            time.sleep(self.skip_s)
        return self.setup()

    def profile_once(self) -> bool:
        """One window: ask for a start, then a stop. False: give up."""
        if not self.prepare():
            return False
        if self.ranked:  # every rank asks at the same instant: the next optimizer step is the same step
            time.sleep(RANK_ALIGN_S - time.time() % RANK_ALIGN_S)
        stops = self.stops
        if not (self._ask("start") and self._hold_window()) or (self.prof and not self._ask("stop")):
            return False
        t = time.time()  # stopped (by a step, or asked now): wait for the export before judging it
        while self.stops == stops and time.time() - t < 120 and not self.done.is_set():
            time.sleep(0.02)
        return self.stops > stops

    def _ask(self, want: str) -> bool:
        """Ask the main thread to start or stop; a hook acts at the next step or forward; where none fires
        (plain tensor code, a CUDA graph replayed), a signal handler does (retried while it defers)."""
        with self.lock:
            self.want, self.want_t = want, self.clock()
        if want == "start":
            self.mark("asked", self.want_t)  # the workload runs on until the main thread begins the start
        t0 = time.time()
        while self.want == want and time.time() - t0 < (120 if self.seen_step else 30):
            hooks_fire = self.first_forward or self.seen_step
            if self.ranked and want == "start" and not self.seen_step and time.time() - t0 < 60:
                time.sleep(0.05)  # a rank: its training loop's optimizer step starts the profiler
                continue
            if want == "start":
                fire = time.time() - max(t0, self.last_hook) > (QUIET_BEFORE_SIGNAL_S if hooks_fire else 0.5)
            else:
                fire = time.time() - t0 > (QUIET_BEFORE_SIGNAL_S if hooks_fire else 0.0)
            if fire and not self.owns_signal():  # the workload's own handler (a scheduler's requeue): never
                if not self.signal_taken:
                    self.signal_taken = True
                    self.note("the workload handles SIGUSR2 itself: the profiler waits for a step or a forward")
                fire = False
            if fire:
                os.kill(os.getpid(), signal.SIGUSR2)
                time.sleep(0.2)
            else:
                time.sleep(0.01)
        if self.want == want:
            self.note("ERROR %s: the workload never reached a point where the profiler could %s" % (want, want))
            return False
        return True

    def _hold_window(self) -> bool:
        """Wait while the profiler runs its window (a step may stop it first). False when it failed or the workload
        ended."""
        t1 = time.time()
        while time.time() - t1 < 60 and not self.done.is_set():
            if self.prof is False:  # stopped at a step (its window was long enough), or failed (then done is set)
                break
            spent = self.clock() - self.started if self.prof else 0.0
            if (self.steps_profiled >= self.steps and spent >= self.window_s) or spent >= (
                self.max_s if self.seen_step else self.window_s
            ):
                break
            time.sleep(0.02)
        return not self.done.is_set()


def window_path(out: str, window: int) -> str:
    """Where window K is written: `out` for the first, `trace.w2.json` (`trace.rank1.w2.json`) for the second."""
    if window <= 1:
        return out
    root, ext = os.path.splitext(out)
    return "%s.w%d%s" % (root, window, ext)


def unsafe_to_start(frame: Any = None) -> bool:
    """A module half-imported, or (from a signal's frame) torch.compile's compiler at work: no place to start."""
    if any(getattr(getattr(m, "__spec__", None), "_initializing", False) is True for m in list(sys.modules.values())):
        return True
    while frame is not None and not any(d in frame.f_code.co_filename.replace("\\", "/") for d in COMPILER_DIRS):
        frame = frame.f_back
    return frame is not None


COMPILER_DIRS = ("torch/_dynamo/", "torch/_inductor/", "torch/_functorch/")  # dynamo, inductor, AOTAutograd
# the variables `trace.inject.prepare` sets (GPUTRIAGE_PROFILE_<NAME>), and their defaults
DEFAULTS = {"skip_s": "2", "steps": "10", "window_s": "0.5", "max_s": "3", "cuda": "1", "gate": ""}
PARSE: dict[str, Callable[[str], Any]] = {"skip_s": float, "steps": int, "window_s": float, "max_s": float}
PARSE.update(cuda="1".__eq__, gate=lambda v: v or None)
LAUNCHERS = ("torchrun", "torch.distributed.run", "torch.distributed.launch", "accelerate", "deepspeed")


def is_launcher(argv: list[str]) -> bool:
    """A distributed launcher's own interpreter (torchrun, python -m torch.distributed.run, accelerate,
    deepspeed): it starts the ranks and runs no model."""
    head = [a for a in argv[:3] if a != "-m"]
    return any(os.path.basename(a) in LAUNCHERS or a in LAUNCHERS for a in head)


def from_environ(environ: os._Environ[str] | dict[str, str], argv: Optional[list[str]] = None) -> Optional[Profiler]:
    """The profiler the variables `trace.inject.prepare` set ask for; they are removed, so the workload's
    child processes (data loader workers) are not profiled. A distributed launcher leaves them for its
    ranks, each of which profiles itself into its own file (`trace.rankN.json`)."""
    if not environ.get("GPUTRIAGE_TRACE_OUT"):
        return None
    if is_launcher(list(getattr(sys, "orig_argv", sys.argv) if argv is None else argv)):
        return None
    out = environ.pop("GPUTRIAGE_TRACE_OUT")
    rank = environ.get("RANK")
    ranked = rank is not None and rank.isdigit()
    if ranked:
        out = os.path.join(os.path.dirname(out), "trace.rank%s.json" % rank)
    given = {k: PARSE[k](environ.pop(f"GPUTRIAGE_PROFILE_{k.upper()}", d)) for k, d in DEFAULTS.items()}
    return Profiler(out, ranked=ranked, **given)


def main() -> Optional[Profiler]:
    """Arm the profiler in this interpreter (what the injected `sitecustomize` calls)."""
    p = from_environ(os.environ)
    if p is None:
        return None
    atexit.register(p.on_exit)
    if signal.getsignal(signal.SIGUSR2) == signal.SIG_DFL:  # never take a handler the interpreter already has
        signal.signal(signal.SIGUSR2, p.on_signal)
    threading.Thread(target=p.worker, name="gputriage-profiler", daemon=True).start()
    return p
