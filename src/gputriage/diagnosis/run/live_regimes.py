"""Regimes while a machine is watched: `watch` and the exporter label each GPU's last second
(`diagnosis.run.live`), and this follows those labels as `run` cuts its timeline into regimes
(`verdict.regimes`, `regimes.lasts`), but as the seconds come, without the end of the run in hand.

- The start-up: until the GPU first names something other than `idle` (the GPU first computes), nothing counts.
- A label that holds for one window only (shorter than `BLIP_WINDOWS` windows) is a blip: folded into the run of
  labels before it, as `verdict.regimes` folds one-window blips.
- A run of one label becomes the regime once it lasts as `regimes.lasts` asks of a run's regime
  (`MIN_REGIME_S`, and three windows); the first one after the start-up has no regime before it, every later one
  that names another bottleneck than the regime before is a change (`run.regime_changed`'s condition).
- Live, the end of the work is not known: a GPU left idle that long after it computed is in an `idle` regime
  (an idle phase in the middle of a run is one too), not in a shut-down."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from gputriage.diagnosis.run.regimes import BLIP_WINDOWS, lasts
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.live_regime import LiveRegime, RegimeChange
from gputriage.model.run import Regime


@dataclass
class _Run:
    """Consecutive seconds of one label: the times of its first and last labels (each label's window ends then)."""

    label: str
    first_s: float
    last_s: float


class RegimeTracker:
    """One GPU's regime, from its label of each second (`add`, in time order)."""

    def __init__(self, gpu: int, window_s: float) -> None:
        """`window_s`: the time each label covers, ending at the time it is given with."""
        self.gpu, self.window_s = gpu, window_s
        self.regime: LiveRegime | None = None
        self.changes = 0
        self._runs: list[_Run] = []  # the last run of labels, and the one a blip ending it would fold into

    def add(self, t_s: float, label: str) -> RegimeChange | None:
        """The label of the window ending at `t_s`; the change of regime it completes, if any. A time not after the
        last one given (the same second asked again, a clock set back) is ignored."""
        if self._runs and t_s <= self._runs[-1].last_s:
            return None
        if not self._runs and label == B.idle.value:
            return None  # the start-up: the GPU has not computed yet
        self._extend(t_s, label)
        last = self._runs[-1]
        held = Regime(last.first_s - self.window_s, t_s, last.label)
        if not lasts(held, self.window_s) or (self.regime is not None and self.regime.bottleneck == last.label):
            return None
        before = self.regime
        self.regime = LiveRegime(
            gpu=self.gpu, bottleneck=last.label, since_s=held.start_s, before=before.bottleneck if before else None
        )
        del self._runs[:-1]
        if before is None:
            return None  # the first regime after the start-up: nothing changed
        self.changes += 1
        return RegimeChange(gpu=self.gpu, from_=before.bottleneck, to=last.label, at_s=held.start_s)

    def _extend(self, t_s: float, label: str) -> None:
        runs = self._runs
        if runs and runs[-1].label == label:
            runs[-1].last_s = t_s
            return
        if len(runs) > 1 and t_s - runs[-1].first_s < BLIP_WINDOWS * self.window_s:
            blip = runs.pop()  # held one window: part of the run before it
            runs[-1].last_s = blip.last_s
        if runs and runs[-1].label == label:
            runs[-1].last_s = t_s
        else:
            runs.append(_Run(label, t_s, t_s))
        del runs[:-2]


class LiveRegimes:
    """Every GPU's regime: `update` with each GPU's label of the second ending at `t_s` (unix seconds)."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self.trackers: dict[int, RegimeTracker] = {}

    def update(self, t_s: float, labels: Mapping[int, str]) -> list[RegimeChange]:
        """The changes of regime these labels complete (most often none)."""
        out = []
        for gpu, label in sorted(labels.items()):
            tracker = self.trackers.setdefault(gpu, RegimeTracker(gpu, self.window_s))
            change = tracker.add(t_s, label)
            if change is not None:
                out.append(change)
        return out

    def current(self) -> dict[int, LiveRegime]:
        """Each GPU's regime, where one is known yet."""
        return {i: t.regime for i, t in sorted(self.trackers.items()) if t.regime is not None}

    def counts(self) -> dict[int, int]:
        """Each labelled GPU's changes of regime so far."""
        return {i: t.changes for i, t in sorted(self.trackers.items())}
