"""Regimes while watched (`watch`, the exporter): each GPU's label of each second followed as `run` cuts its
timeline — a blip is no regime, a change is reported once, when the new label has held as long as `run` asks of a
regime (regimes.MIN_REGIME_S), and the start-up before the GPU first computes counts for nothing."""

from __future__ import annotations

from gputriage.diagnosis.run.live_regimes import LiveRegimes, RegimeTracker
from gputriage.diagnosis.run.regimes import MIN_REGIME_S
from gputriage.model.live_regime import LiveRegime, RegimeChange

T0 = 1_796_206_700.0  # a fake clock: unix seconds of the first label
WINDOW_S = 1.0  # each label covers the second before it, given once a second as the exporter's judge does
HOLD = int(MIN_REGIME_S.value / WINDOW_S)  # labels that make a regime: MIN_REGIME_S of windows


class Clock:
    """Feeds a tracker one label per window, the time moving on by one window each."""

    def __init__(self, tracker: RegimeTracker) -> None:
        self.tracker, self.t_s = tracker, T0
        self.changes: list[RegimeChange] = []

    def feed(self, label: str, n: int = 1) -> list[RegimeChange]:
        got = []
        for _ in range(n):
            change = self.tracker.add(self.t_s, label)
            self.t_s += WINDOW_S
            if change is not None:
                got.append(change)
        self.changes += got
        return got


def test_the_first_regime_after_the_start_up_is_no_change():
    clock = Clock(RegimeTracker(0, WINDOW_S))
    clock.feed("idle", 30)  # the start-up: the GPU has not computed yet
    assert clock.tracker.regime is None
    clock.feed("compute_bound", HOLD - 1)
    assert clock.tracker.regime is None  # not yet held long enough to count
    clock.feed("compute_bound")
    assert clock.tracker.regime == LiveRegime(gpu=0, bottleneck="compute_bound", since_s=T0 + 30 - WINDOW_S)
    assert clock.changes == [] and clock.tracker.changes == 0


def test_a_change_is_reported_once_when_the_new_label_has_held_min_regime_s():
    clock = Clock(RegimeTracker(0, WINDOW_S))
    clock.feed("compute_bound", 20)
    started = clock.t_s
    assert clock.feed("input_starved", HOLD - 1) == []  # held MIN_REGIME_S less one window: not yet
    (change,) = clock.feed("input_starved")
    assert change == RegimeChange(gpu=0, from_="compute_bound", to="input_starved", at_s=started - WINDOW_S)
    assert clock.feed("input_starved", 100) == []  # reported once
    regime = clock.tracker.regime
    assert regime is not None and (regime.bottleneck, regime.before) == ("input_starved", "compute_bound")
    assert regime.since_s == started - WINDOW_S and clock.tracker.changes == 1


def test_blips_shorter_than_a_regime_do_not_count():
    clock = Clock(RegimeTracker(0, WINDOW_S))
    clock.feed("compute_bound", 20)
    clock.feed("input_starved")  # one second: a checkpoint, a garbage collection
    clock.feed("compute_bound", 5)
    clock.feed("sync_bound", HOLD - 1)  # almost a regime, then back
    clock.feed("compute_bound", 30)
    assert clock.changes == [] and clock.tracker.regime is not None
    assert clock.tracker.regime.bottleneck == "compute_bound" and clock.tracker.regime.since_s == T0 - WINDOW_S


def test_a_one_second_blip_inside_a_new_regime_does_not_restart_it():
    clock = Clock(RegimeTracker(0, WINDOW_S))
    clock.feed("compute_bound", 20)
    started = clock.t_s
    clock.feed("input_starved", HOLD // 2)
    clock.feed("compute_bound")  # one window of the old label, folded into the new regime's run
    (change,) = clock.feed("input_starved", HOLD - HOLD // 2)
    assert change.to == "input_starved" and change.at_s == started - WINDOW_S


def test_idle_after_the_work_is_a_regime_and_so_is_the_work_coming_back():
    clock = Clock(RegimeTracker(0, WINDOW_S))
    clock.feed("launch_bound", 20)
    clock.feed("idle", HOLD)
    clock.feed("launch_bound", HOLD)
    assert [(c.from_, c.to) for c in clock.changes] == [("launch_bound", "idle"), ("idle", "launch_bound")]
    assert clock.tracker.changes == 2


def test_a_label_given_again_for_the_same_second_is_ignored():
    tracker = RegimeTracker(0, WINDOW_S)
    for k in range(HOLD - 1):
        for _ in range(4):  # `watch` asks four times a second; the sample it judges moves on once a second
            tracker.add(T0 + k * WINDOW_S, "compute_bound")
    assert tracker.regime is None  # as many seconds as were labelled, not as many times as it was asked
    tracker.add(T0 + (HOLD - 1) * WINDOW_S, "compute_bound")
    assert tracker.regime is not None


def test_the_threshold_is_runs_own_with_three_windows_at_least():
    """Labels of 5 s windows: a regime needs three of them (15 s), as `regimes.lasts` asks of a run's regime."""
    window_s = 5.0
    tracker = RegimeTracker(0, window_s)
    assert 3 * window_s > MIN_REGIME_S.value
    for k in range(2):
        tracker.add(T0 + k * window_s, "memory_bound")
    assert tracker.regime is None  # 10 s: MIN_REGIME_S, but two windows
    tracker.add(T0 + 2 * window_s, "memory_bound")
    assert tracker.regime is not None and tracker.regime.since_s == T0 - window_s


def test_every_gpu_is_followed_on_its_own():
    regimes = LiveRegimes(WINDOW_S)
    changes = []
    for k in range(40):
        labels = {0: "compute_bound", 1: "compute_bound" if k < 20 else "throttled"}
        changes += regimes.update(T0 + k * WINDOW_S, labels)
    assert changes == [RegimeChange(gpu=1, from_="compute_bound", to="throttled", at_s=T0 + 20 * WINDOW_S - WINDOW_S)]
    assert regimes.counts() == {0: 0, 1: 1}
    current = regimes.current()
    assert current[0].bottleneck == "compute_bound" and current[1].before == "compute_bound"


def test_watch_shows_each_gpus_regime_since_when_and_the_one_before():
    import time

    from rich.console import Console

    from gputriage.cli.watch import frame
    from gputriage.model.run import GpuStatic
    from gputriage.model.sample import GpuSample, Sample

    regimes = LiveRegimes(WINDOW_S)
    for k in range(40):
        regimes.update(T0 + k * WINDOW_S, {0: "compute_bound" if k < 20 else "input_starved", 1: "compute_bound"})
    sample = Sample(t_s=T0 + 40, gpus=[GpuSample(index=0, util_pct=30.0), GpuSample(index=1, util_pct=99.0)])
    console = Console(width=120, record=True)
    console.print(frame(sample, {"0": GpuStatic(), "1": GpuStatic()}, {0: "input_starved"}, None, regimes.current()))
    text = console.export_text()
    since = time.strftime("%H:%M:%S", time.localtime(T0 + 19 * WINDOW_S))
    first = time.strftime("%H:%M:%S", time.localtime(T0 - WINDOW_S))
    assert f"GPU 0 regime: input_starved since {since} (was compute_bound)" in text
    assert f"GPU 1 regime: compute_bound since {first}\n" in text  # the first after the start-up: nothing before it
    console = Console(width=120, record=True)
    console.print(frame(sample, {"0": GpuStatic()}, {}, None, {}))
    assert "regime" not in console.export_text()  # none known yet: no line
