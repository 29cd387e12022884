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
- Re-armed in a new regime (`rearm`): once the run has had a steady state, a GPU whose steady state changes to
  another (`_family`) and keeps it for REARM_AFTER_S, or a workload whose reported step rate falls by more than
  its noise for as long (RATE_NOISE_K robust deviations of the rates of the regime before, and RATE_FALL_SHARE of
  it at least), gets one more window, at most REARM_PER_HOUR automatic windows in any hour (one profile held an
  H200 workload 3.5 s at the median, 0.7-6.9 s from the 10th to the 90th percentile, 8.9 s at most, over 77
  recorded holds: `benchmarks/profiler_cost.py`). Under `auto`, a new regime is profiled
  only where the sampler cannot decide it (as above), a fall of the rate always (the labels do not explain it).
- Asked from outside (`ask`: `gputriage profile RUN_ID`, SIGUSR1 to `gputriage run`): one more window, at once,
  outside the budget.
The windows in which the profiler held the workload (`held`: from its start to its export's end, one still
running to infinity) are no regime: they feed no label and no rate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from gputriage.diagnosis.run.classify import label
from gputriage.diagnosis.run.verdict import holds_workload_memory
from gputriage.model.bottleneck import HOST_BOUND
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Threshold
from gputriage.model.numbers import at_least_half, median, more_than_half
from gputriage.model.run import GpuStatic
from gputriage.model.window import WindowMetrics

J = "judgement"
STEADY_WINDOWS = Threshold(
    "profile_steady_windows",
    3,
    "windows",
    "consecutive windows with one label that make the steady state the profiler waits for",
    J,
)
MAX_WAIT_S = Threshold(
    "profile_max_wait_s", 20.0, "s", "after a GPU first computes, how long `--profile` waits for a steady state", J
)
UNLIKE_UTIL_POINTS = Threshold(
    "profile_unlike_util_points",
    40.0,
    "points of GPU-Util",
    "distance from the steady state's GPU-Util at which a profiled window is profiled again",
    "recorded H200 runs: the profiler costs 0-30 points (small kernels); a warm-up window read 0% against 84%",
)
REARM_AFTER_S = Threshold(
    "profile_rearm_after_s",
    10.0,
    "s",
    "how long a new regime (or a fall of the step rate) lasts before the profiler is re-armed for one window in it",
    "judgement: the same as run.regime_changed's shortest regime",
)
REARM_PER_HOUR = Threshold(
    "profile_rearm_per_hour",
    6,
    "windows an hour",
    "most windows profiled automatically in any hour of a long run (one held an H200 workload "
    "3.5 s at the median, 8.9 s at most: benchmarks/profiler_cost.py)",
    "judgement: 0.6% of an hour at the median, 1.5% at the longest",
)
RATE_NOISE_K = Threshold(
    "profile_rate_noise_k",
    3.0,
    "robust deviations",
    "fall of the median step rate, in robust deviations (1.4826 MAD) of the rates before, that re-arms the profiler",
    J,
)
RATE_FALL_SHARE = Threshold(
    "profile_rate_fall_share",
    0.2,
    "of the rate before",
    "least fall of the step rate that re-arms the profiler, whatever its noise",
    "judgement, as run.regime_changed's regime_rate_change_share",
)
MAX_WINDOWS = Threshold(
    "profile_steady_windows_max",
    2.0,
    "windows",
    "windows asked for the steady state in all: the first, and one again where the first was unlike the run",
    "judgement: a second window settles whether the first caught a pause or a warm-up; each holds the workload "
    "for seconds (3.5 s at the median on an H200, `benchmarks/profiler_cost.py`)",
)
IN_USE = Threshold(
    "profile_in_use_pct",
    1.0,
    "%",
    "GPU-Util or SM activity from which the workload uses the GPU",
    "H200 recordings: a host-bound loop reads 4-5%, an idle GPU 0%",
)
HISTORY = Threshold(
    "profile_history_windows",
    600.0,
    "windows",
    "windows kept per GPU (and step rates) to compare a profiled window with the run",
    "judgement: ten minutes of 1 s windows, memory bounded whatever the run's length",
)
RATE_HISTORY = Threshold(
    "profile_rate_history_factor",
    2.0,
    "x steady windows",
    "rates before a fall, in steady windows, that give the rate of the regime before and its noise",
    "judgement: twice the recent span a fall is measured over",
)


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
    last_t1: float = 0.0  # end of its last window that was no hold
    last_steps: tuple[float, float] | None = None  # (end, steps) of its last window that reported steps


class ProfileGate:
    """Feed it each GPU's closed windows (`add`); `first()` and `again()` say when to ask for a window."""

    def __init__(self, mode: str, static: dict[int, GpuStatic]) -> None:
        self.mode, self.static = mode, static
        self.gpus: dict[int, _Gpu] = {i: _Gpu() for i in static}
        self.asked = 0  # windows asked for in all (what the gate file holds)
        self.reasons: list[str] = []  # why, window by window
        self.kinds: list[str] = []  # steady, regime or asked, window by window
        self.notes: list[str] = []  # what was not profiled, and why (the budget spent)
        self.profiled: list[tuple[float, float]] = []  # the windows profiled so far (unix s)
        self.done: set[int] = set()  # the numbers of the windows profiled (or given up) so far
        self.first_step_s: float | None = None  # start of the first window in which the workload reported a step
        self.holds: list[tuple[float, float]] = []  # when the profiler held the workload (unix s)
        self.base: dict[int, str] = {}  # each GPU's regime when a window was last asked (or when first steady)
        self.rates: list[tuple[float, float]] = []  # (window end, steps/s) outside the holds, since the last ask
        self.auto_asks: list[float] = []  # when each automatic window was asked (the hourly budget)

    def held(self, holds: Sequence[tuple[float, float]]) -> None:
        """The times the profiler held the workload so far (one still running ends at infinity)."""
        self.holds = list(holds)

    def _in_hold(self, t0: float, t1: float) -> bool:
        return any(t1 >= a and t0 <= b for a, b in self.holds)

    def add(self, gpu: int, w: WindowMetrics) -> None:
        g = self.gpus.setdefault(gpu, _Gpu())
        if self.first_step_s is None and (w.steps_total or 0.0) > 0:
            self.first_step_s = w.t0_s
        if w.util_pct is not None:
            g.history.append((w.t0_s, w.t1_s, w.util_pct))
            del g.history[: -int(HISTORY.value)]
        if g.first_used_bytes is None and w.used_bytes is not None:
            g.first_used_bytes = w.used_bytes
        if self._in_hold(w.t0_s, w.t1_s):  # the profiler's doing, not the workload's: no label, no rate
            g.last_steps = None
            return
        if w.steps_total is not None and gpu == min(self.gpus):
            if g.last_steps is not None and w.t1_s > g.last_steps[0]:
                self.rates.append((w.t1_s, (w.steps_total - g.last_steps[1]) / (w.t1_s - g.last_steps[0])))
                del self.rates[: -int(HISTORY.value)]
            g.last_steps = (w.t1_s, w.steps_total)
        if g.computed_at is None and not self._in_use(g, w):
            return
        if g.computed_at is None:
            g.computed_at = w.t0_s
        g.last_t1 = w.t1_s
        b, others = label(w, self.static.get(gpu, GpuStatic()))
        g.labels = (g.labels + [(b, tuple(others))])[-int(STEADY_WINDOWS.value) :]
        families = {_family(b) for b, _ in g.labels}
        if len(g.labels) < STEADY_WINDOWS.value or len(families) != 1 or B.idle.value in families:
            g.regime = None
        elif g.regime != _family(b):
            g.regime, g.steady_from = _family(b), w.t0_s

    def _in_use(self, g: _Gpu, w: WindowMetrics) -> bool:
        """The workload is at its work on this GPU: it computes there, or it holds memory there and has reported a
        step (a loop whose GPU waits on the host nearly all the time reads GPU-Util 0%)."""
        if (w.util_pct or 0.0) >= IN_USE.value or (w.sm_active_pct or 0.0) >= IN_USE.value:
            return True
        return holds_workload_memory(w.used_max_bytes, g.first_used_bytes) and self.first_step_s is not None

    def _ask(self, reason: str, kind: str, now_s: float | None = None) -> str:
        self.asked += 1
        self.reasons.append(reason)
        self.kinds.append(kind)
        if now_s is not None:
            self.auto_asks.append(now_s)
        self.base = {i: g.regime for i, g in self.gpus.items() if g.regime is not None}
        self.rates.clear()  # the rate's reference: the regime profiled now, after the profiler's hold
        return reason

    def ask(self, reason: str) -> int:
        """A window asked for from outside (a user): the number it will have."""
        self._ask(reason, "asked")
        return self.asked

    def steady_asked(self) -> int:
        return self.kinds.count("steady")

    def pending(self) -> bool:
        """A window asked for is not profiled yet."""
        return any(k not in self.done for k in range(1, self.asked + 1))

    def finished(self, window: int) -> None:
        """A window the profiler gave up (its start or export failed): no longer pending."""
        self.done.add(window)

    def first(self, now_s: float) -> str | None:
        """Why to ask for the first window now; None: not (yet, or under `auto`, at all)."""
        if self.steady_asked():
            return None
        reason = self._first(now_s)
        if reason is not None:
            self._ask(reason, "steady", now_s)
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
        undecided = {i: g for i, g in steady.items() if self._undecided(g)}
        if not undecided:
            return None
        i, g = min(undecided.items())
        return f"the sampler cannot decide on GPU {i}: " + self._open(g) + f" ({said})"

    @staticmethod
    def _open(g: _Gpu) -> str:
        named = list(dict.fromkeys([b for b, _ in g.labels] + [o for _, others in g.labels for o in others]))
        return " or ".join(b.value for b in named)

    @staticmethod
    def _undecided(g: _Gpu) -> bool:
        """Most of its windows leave a cause open, or they name different causes (see `auto`)."""
        return more_than_half(sum(1 for _, o in g.labels if o), len(g.labels)) or len({b for b, _ in g.labels}) > 1

    def again(self, window_s: tuple[float, float], window: int = 1) -> str | None:
        """After a profiled window [t0, t1] (unix s), number `window`: why to ask for another; None when it is like
        the run (or was asked for another reason than the steady state)."""
        self.profiled.append((window_s[0], window_s[1]))
        self.done.add(window)
        kind = self.kinds[window - 1] if 0 < window <= len(self.kinds) else "steady"
        if kind != "steady" or not self.steady_asked() or self.steady_asked() >= MAX_WINDOWS.value:
            return None
        t0, t1 = window_s
        for i, g in sorted(self.gpus.items()):
            # windows mostly inside the profiled one: those at its edges hold the profiler's start and export
            inside = [u for a, b, u in g.history if at_least_half(min(b, t1) - max(a, t0), b - a)]
            if g.reference_util is None or not inside:
                continue
            w, s = float(median(inside)), g.reference_util
            if abs(w - s) >= UNLIKE_UTIL_POINTS.value:
                return self._ask(
                    f"the profiled window was unlike the run on GPU {i} (GPU-Util {w:.0f}% against "
                    f"{s:.0f}% in the steady state): profiled again",
                    "steady",
                    t1,
                )
        return None

    def late(self) -> str | None:
        """Why to ask for another window now that the workload reported its first step after every window
        profiled so far (they were its warm-up); None otherwise."""
        first = self.first_step_s
        if first is None or not self.profiled or self.steady_asked() >= MAX_WINDOWS.value or self.pending():
            return None
        if any(t1 > first for _, t1 in self.profiled):
            return None
        return self._ask(
            f"the profiled window ended {first - self.profiled[-1][1]:.0f} s before the workload's "
            "first reported step (its warm-up): profiled again",
            "steady",
            first,
        )

    def rearm(self, now_s: float) -> str | None:
        """Why to profile one more window now that the run changed regime; None otherwise (no change, a window
        still pending, or the hourly budget spent: then a note says so)."""
        if self.pending() or (self.holds and self.holds[-1][1] > now_s):
            return None  # a window asked for is not profiled yet, or the profiler holds the workload
        working = {i: g for i, g in self.gpus.items() if g.computed_at is not None}
        steady = {i: g.regime for i, g in working.items() if g.regime is not None}
        if any(i not in self.base for i in steady):  # a GPU's first steady state: the reference, no change
            self.base = {**steady, **self.base}
            self.rates.clear()
            return None
        reason = self._changed(working) or self._rate_fell()
        if reason is None:
            return None
        self.base = {**self.base, **steady}
        self.rates.clear()
        spent = [t for t in self.auto_asks if now_s - t < 3600.0]
        if len(spent) >= REARM_PER_HOUR.value:
            self.notes.append(
                f"{reason}: not profiled, {len(spent)} windows in the last hour already "
                f"(at most {REARM_PER_HOUR.value:g})"
            )
            return None
        return self._ask(f"{reason}: profiled in the new regime", "regime", now_s)

    def _changed(self, working: dict[int, _Gpu]) -> str | None:
        for i, g in sorted(working.items()):
            was = self.base.get(i)
            if g.regime is None or g.steady_from is None or was is None or g.regime == was:
                continue
            if g.last_t1 - g.steady_from < REARM_AFTER_S.value:
                continue
            if self.mode == "auto" and not self._undecided(g):
                self.base[i] = g.regime  # decided by the sampler: its verdict stands, at none of the profiler's cost
                continue
            said = f" (the sampler cannot decide: {self._open(g)})" if self.mode == "auto" else ""
            return f"the run changed regime on GPU {i}: {was} → {g.regime} for {g.last_t1 - g.steady_from:.0f} s{said}"
        return None

    def _rate_fell(self) -> str | None:
        """The step rate of the last REARM_AFTER_S against that of the regime before it, beyond its noise."""
        if not self.rates:
            return None
        recent = [r for t, r in self.rates if t > self.rates[-1][0] - REARM_AFTER_S.value]
        before = [r for t, r in self.rates if t <= self.rates[-1][0] - REARM_AFTER_S.value]
        if len(recent) < STEADY_WINDOWS.value or len(before) < RATE_HISTORY.value * STEADY_WINDOWS.value:
            return None
        ref, now = float(median(before)), float(median(recent))
        spread = 1.4826 * float(median([abs(r - ref) for r in before]))
        if ref <= 0 or ref - now < max(RATE_NOISE_K.value * spread, RATE_FALL_SHARE.value * ref):
            return None
        if not more_than_half(sum(1 for r in recent if r < ref - RATE_FALL_SHARE.value * ref), len(recent)):
            return None  # not sustained: a slow step or two
        return f"the workload's step rate fell from {ref:.3g} to {now:.3g} steps/s for {REARM_AFTER_S.value:g} s"
