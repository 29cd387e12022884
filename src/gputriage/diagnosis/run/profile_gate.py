"""When a gated `run --profile` profiles: the sampler's word to the profiler inside the workload.

The profiler waits (`trace.inject.open_gate`); these rules, applied to each GPU's closed windows as
they arrive, say when to ask it for a window:
- The steady state: once a GPU has computed, STEADY_WINDOWS consecutive windows with the same label
  (`classify.label`), not idle, on every GPU that computes; a new label ends it, the next such run
  of windows starts another. The host-side causes count as one label (the counters can name one in
  one second and another in the next: the host's work is the steady state).
- `on`: ask at the steady state; with no GPU sampled, at once; when no steady state shows within
  MAX_WAIT_S of a GPU first computing, then (a run that keeps changing still gets its window).
- A GPU is in use from the window in which it computes (GPU-Util or SM activity >= 1%), or in which it
  holds the workload's memory once the workload has reported a step (a host-bound loop can read 0%).
- `auto`: ask in a steady state only where the sampler cannot decide — the labels of most of its
  windows leave another cause possible (a host-side cause the counters cannot tell apart; tensor
  cores or small kernels on a GPU without GPM; a collective on GPUs whose links are not counted),
  or its windows name different host-side causes. One window is not enough: the first window of a
  steady state often caught the work starting part-way through it (SM activity averaged over the
  second, GPU-Util read at its end). Otherwise never: the sampler's verdict stands, at none of the
  profiler's cost.
- Once a window is profiled, ask for another (MAX_WINDOWS in all) when the median GPU-Util inside
  it lies UNLIKE_UTIL_POINTS or more from that of the steady state the first window was asked in: a
  window unlike the rest of the run says nothing about it (a warm-up, a pause, an evaluation). The
  reference is fixed when the first window is asked for: the profiler starting holds the workload
  for seconds, and that is no steady state to compare with. Likewise when a workload that reports
  its steps (`gputriage.step()`) reports its first after every window profiled so far: those
  windows were its warm-up (a steady state of loading, compiling or building plans), not its work.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputriage.diagnosis.run.classify import label
from gputriage.diagnosis.run.verdict import holds_workload_memory
from gputriage.model.bottleneck import HOST_BOUND
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Threshold
from gputriage.model.numbers import median
from gputriage.model.run import GpuStatic
from gputriage.model.window import WindowMetrics

J = "judgement"
STEADY_WINDOWS = Threshold("profile_steady_windows", 3, "windows",
                           "consecutive windows with one label that make the steady state the profiler waits for", J)
MAX_WAIT_S = Threshold("profile_max_wait_s", 20.0, "s",
                       "after a GPU first computes, how long `--profile` waits for a steady state", J)
UNLIKE_UTIL_POINTS = Threshold("profile_unlike_util_points", 40.0, "points of GPU-Util",
                               "distance from the steady state's GPU-Util at which a profiled window is profiled "
                               "again", "recorded H200 runs: the profiler costs 0-30 points (small kernels); a "
                               "warm-up window read 0% against 84%")
MAX_WINDOWS = 2  # windows asked for in all
IN_USE_PCT = 1.0  # GPU-Util or SM activity from which the workload uses the GPU (a host-bound loop: 4-5%)
HISTORY = 600  # windows kept per GPU for the comparison


def _family(b: B) -> str:
    """The host-side causes are one steady state: the GPU waits on the host; which cause the counters
    name can change from one window to the next (a read back caught in one second, not the next)."""
    return "host-side" if b in HOST_BOUND else b.value


@dataclass
class _Gpu:
    labels: list[tuple[B, tuple[B, ...]]] = field(default_factory=list)  # the last STEADY_WINDOWS labels
    history: list[tuple[float, float, float]] = field(default_factory=list)  # (t0, t1, GPU-Util)
    regime: str | None = None  # the steady state the GPU is in now (`_family` of its labels); None: not steady
    steady_from: float | None = None  # when it began
    computed_at: float | None = None  # when it was first in use: computing, or holding the workload's memory
    first_used_bytes: float | None = None
    reference_util: float | None = None  # median GPU-Util of the steady state the first window was asked in


class ProfileGate:
    """Feed it each GPU's closed windows (`add`); `first()` and `again()` say when to ask for a window."""

    def __init__(self, mode: str, static: dict[int, GpuStatic]) -> None:
        self.mode, self.static = mode, static
        self.gpus: dict[int, _Gpu] = {i: _Gpu() for i in static}
        self.asked = 0
        self.reasons: list[str] = []
        self.profiled: list[tuple[float, float]] = []  # the windows profiled so far (unix s)
        self.first_step_s: float | None = None  # start of the first window in which the workload reported a step

    def add(self, gpu: int, w: WindowMetrics) -> None:
        g = self.gpus.setdefault(gpu, _Gpu())
        if self.first_step_s is None and (w.steps_total or 0.0) > 0:
            self.first_step_s = w.t0_s
        if w.util_pct is not None:
            g.history.append((w.t0_s, w.t1_s, w.util_pct))
            del g.history[:-HISTORY]
        if g.first_used_bytes is None and w.used_bytes is not None:
            g.first_used_bytes = w.used_bytes
        if g.computed_at is None and not self._in_use(g, w):
            return
        if g.computed_at is None:
            g.computed_at = w.t0_s
        b, others = label(w, self.static.get(gpu, GpuStatic()))
        g.labels = (g.labels + [(b, tuple(others))])[-int(STEADY_WINDOWS.value):]
        families = {_family(b) for b, _ in g.labels}
        if len(g.labels) < STEADY_WINDOWS.value or len(families) != 1 or B.idle.value in families:
            g.regime = None
        elif g.regime != _family(b):
            g.regime, g.steady_from = _family(b), w.t0_s

    def _in_use(self, g: _Gpu, w: WindowMetrics) -> bool:
        """The workload is at its work on this GPU: it computes there, or it holds memory there and has reported a
        step (a loop whose GPU waits on the host nearly all the time reads GPU-Util 0%)."""
        if (w.util_pct or 0.0) >= IN_USE_PCT or (w.sm_active_pct or 0.0) >= IN_USE_PCT:
            return True
        return holds_workload_memory(w.used_max_bytes, g.first_used_bytes) and self.first_step_s is not None

    def first(self, now_s: float) -> str | None:
        """Why to ask for the first window now; None: not (yet, or under `auto`, at all)."""
        if self.asked:
            return None
        reason = self._first(now_s)
        if reason is not None:
            self.asked = 1
            self.reasons.append(reason)
            for g in self.gpus.values():  # what a profiled window must look like: this steady state
                if g.regime is not None and g.steady_from is not None:
                    utils = [u for a, _, u in g.history if a >= g.steady_from]
                    g.reference_util = float(median(utils)) if utils else None
        return reason

    def _first(self, now_s: float) -> str | None:
        if not self.gpus:
            return "no GPU is sampled: profiled without waiting for a steady state" if self.mode == "on" else None
        working = {i: g for i, g in self.gpus.items() if g.computed_at is not None}
        if not working:
            return None
        steady = {i: g for i, g in working.items() if g.regime is not None}
        if len(steady) < len(working):
            started = min(g.computed_at for g in working.values() if g.computed_at is not None)
            if self.mode == "on" and now_s - started >= MAX_WAIT_S.value:
                return f"no steady state {MAX_WAIT_S.value:.0f} s after the GPU first computed: profiled as it runs"
            return None
        said = ", ".join(f"GPU {i}: {g.labels[-1][0].value}" for i, g in sorted(steady.items()))
        if self.mode == "on":
            return f"steady state ({said})"
        # most of the windows leave a cause open: not one window that caught the work starting part-way through
        undecided = {i: g for i, g in steady.items()
                     if 2 * sum(1 for _, o in g.labels if o) > len(g.labels) or len({b for b, _ in g.labels}) > 1}
        if not undecided:
            return None
        i, g = min(undecided.items())
        named = list(dict.fromkeys([b for b, _ in g.labels] + [o for _, others in g.labels for o in others]))
        return f"the sampler cannot decide on GPU {i}: " + " or ".join(b.value for b in named) + f" ({said})"

    def again(self, window_s: tuple[float, float]) -> str | None:
        """After a profiled window [t0, t1] (unix s): why to ask for another; None when it is like the run."""
        self.profiled.append((window_s[0], window_s[1]))
        if not self.asked or self.asked >= MAX_WINDOWS:
            return None
        t0, t1 = window_s
        for i, g in sorted(self.gpus.items()):
            # windows mostly inside the profiled one: those at its edges hold the profiler's start and export
            inside = [u for a, b, u in g.history if min(b, t1) - max(a, t0) >= 0.5 * (b - a)]
            if g.reference_util is None or not inside:
                continue
            w, s = float(median(inside)), g.reference_util
            if abs(w - s) >= UNLIKE_UTIL_POINTS.value:
                self.asked += 1
                reason = (f"the profiled window was unlike the run on GPU {i} (GPU-Util {w:.0f}% against {s:.0f}% "
                          "in the steady state): profiled again")
                self.reasons.append(reason)
                return reason
        return None

    def late(self) -> str | None:
        """Why to ask for another window now that the workload reported its first step after every window
        profiled so far (they were its warm-up); None otherwise."""
        first = self.first_step_s
        if first is None or not self.profiled or self.asked >= MAX_WINDOWS or self.asked > len(self.profiled):
            return None
        if any(t1 > first for _, t1 in self.profiled):
            return None
        self.asked += 1
        reason = (f"the profiled window ended {first - self.profiled[-1][1]:.0f} s before the workload's first "
                  "reported step (its warm-up): profiled again")
        self.reasons.append(reason)
        return reason
