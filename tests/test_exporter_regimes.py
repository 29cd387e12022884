"""The exporter's regimes: each GPU's labelled seconds followed as `run` follows its windows — served as
gputriage_regime_changes_total, gputriage_regime and gputriage_regime_since_timestamp_seconds, the last changes
kept in its state and served as JSON at `/regimes`. Driven through the exporter as `gputriage exporter` wires it, on
a replayed H200 (no GPU), with the samples' clock set by the test."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import msgspec
import pytest

from gputriage.diagnosis.run.regimes import MIN_REGIME_S
from gputriage.model.live_regime import RegimeChange, RegimesNow
from gputriage.model.sample import Sample
from gputriage.testing.stream_nvml import StreamNvml

pytest.importorskip("prometheus_client")

FIXTURES = Path(__file__).parent / "fixtures" / "h200"
# the steady part of a recorded 10 Hz bf16 GEMM stream of an H200: compute_bound, second after second
BUSY = [
    r
    for r in json.loads((FIXTURES / "scenario_samples.json").read_text())["healthy_bf16"]["samples"]
    if r["util"] >= 90
]
T0 = 1_796_206_700.0  # the samples' clock: unix seconds of the first


def _families(url: str) -> dict:
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=5) as r:
        return {f.name: f for f in text_string_to_metric_families(r.read().decode())}


def _idle(s: Sample) -> Sample:
    """The same GPU with nothing running: no kernel, no SM active, no copy."""
    gpus = [
        msgspec.structs.replace(g, util_pct=0.0, sm_active_pct=0.0, tensor_active_pct=0.0, pcie_rx_mib_per_s=0.0)
        for g in s.gpus
    ]
    return msgspec.structs.replace(s, gpus=gpus)


def test_a_change_of_regime_is_served_and_kept(make_host):
    from gputriage.api.exporter import exporter

    ex = exporter(port=0, period_s=0.5, window_s=5, check_every_s=0, nvml=StreamNvml(BUSY), host=make_host()).open()
    busy = ex.sampler.sample_once()
    idle = _idle(busy)
    seconds = int(MIN_REGIME_S.value)  # a regime's length, in the judge's one-second labels
    script = ["busy"] * (2 * seconds) + ["idle"] + ["busy"] * 5 + ["idle"] * (2 * seconds)  # one idle second: a blip
    labels = []
    for k, what in enumerate(script):
        for half in (0.0, 0.5):  # two samples a second, as at --period 0.5
            ex.sampler.recent.append(msgspec.structs.replace(busy if what == "busy" else idle, t_s=T0 + k + half))
        labels.append(ex.judge_once()[0])
    assert labels[0] == "compute_bound" and labels[2 * seconds] == "idle" and labels[-1] == "idle"

    went_idle = T0 + 2 * seconds + 1 + 5 + 0.5 - 1.0  # the first idle second of the lasting run began then
    state = ex.state()
    assert state.regime_changes == [RegimeChange(gpu=0, from_="compute_bound", to="idle", at_s=went_idle)]
    assert state.regime_changes_total == {0: 1}
    ex.serve()
    try:
        fams = _families(ex.url)
        (total,) = fams["gputriage_regime_changes"].samples  # a counter: served as ..._total
        assert total.name == "gputriage_regime_changes_total" and total.labels["gpu"] == "0" and total.value == 1
        (regime,) = fams["gputriage_regime"].samples
        assert regime.labels["bottleneck"] == "idle" and regime.value == 1
        (since,) = fams["gputriage_regime_since_timestamp_seconds"].samples
        assert since.value == went_idle
        with urllib.request.urlopen(ex.url.replace("/metrics", "/regimes"), timeout=5) as r:
            now = msgspec.json.decode(r.read(), type=RegimesNow)
        assert now.changes == state.regime_changes and now.changes_total == {0: 1}
        assert [(g.gpu, g.bottleneck, g.since_s, g.before) for g in now.regimes] == [
            (0, "idle", went_idle, "compute_bound")
        ]
    finally:
        ex.stop()


def test_every_gpu_is_counted_from_the_start(make_host):
    """Before any change: 0 for each GPU (a counter Prometheus can take the increase of from the first scrape), and
    no regime until one has lasted."""
    from gputriage.api.exporter import exporter

    ex = exporter(port=0, period_s=0.5, window_s=5, check_every_s=0, nvml=StreamNvml(BUSY), host=make_host()).open()
    ex.sampler.recent.append(msgspec.structs.replace(ex.sampler.sample_once(), t_s=T0))
    ex.judge_once()
    state = ex.state()
    assert state.regime_changes_total == {0: 0} and state.regimes == {} and state.regime_changes == []
    ex.stop()
