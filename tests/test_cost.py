"""A run's cost: the GPU-hours paid, the useful share (SM activity, else GPU-Util as an upper bound),
and at the user's price — from the config file or --price, never assumed — what the waste costs."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import msgspec
import pytest

from gputriage.diagnosis.run.judge import judge
from gputriage.model.run import RunMeta
from gputriage.model.sample import Sample
from gputriage.sampling.session import replay

TYPED = json.loads(gzip.decompress((Path(__file__).parent / "fixtures" / "h200" / "runs_typed.json.gz").read_bytes()))


def judged(name: str, price: float | None = None, gpm: bool = True):
    rec = TYPED[name]
    samples = [msgspec.convert(s, Sample) for s in rec["samples"]]
    if not gpm:
        for s in samples:
            s.gpus = [msgspec.structs.replace(g, sm_active_pct=None) for g in s.gpus]
    meta = msgspec.convert(rec["meta"], RunMeta)
    meta.gpus["0"].gpm = gpm
    meta.price_per_gpu_hour = price
    return judge(replay(samples, meta), 0)


def test_the_useful_share_is_sm_activity_over_the_paid_time():
    healthy, launch = judged("healthy").cost, judged("launch_bound").cost
    assert healthy is not None and launch is not None
    assert healthy.measure == "SM activity" and launch.measure == "SM activity"
    # bf16 GEMMs at 96% SM activity over a run that also pays its start-up (CUDA, the model: a third of a 12 s
    # run); a launch-bound loop at 15% SM activity
    assert 50 < healthy.useful_pct < 97 and launch.useful_pct < 15
    assert launch.gpu_hours_at_twice == pytest.approx(launch.gpu_hours / 2, rel=0.02)
    assert healthy.gpu_hours_at_twice is None or healthy.useful_pct <= 50
    assert healthy.cost is None and healthy.price_per_gpu_hour is None  # no price assumed
    assert "x price" in healthy.formula


def test_at_a_price_the_waste_costs_the_idle_share():
    c = judged("launch_bound", price=3.0).cost
    assert c is not None and c.cost == pytest.approx(c.gpu_hours * 3.0, rel=1e-3)
    assert c.waste_cost == pytest.approx((c.gpu_hours - c.useful_gpu_hours) * 3.0, rel=1e-3)
    assert c.waste_cost > 0.8 * c.cost


def test_without_gpm_gpu_util_is_an_upper_bound_and_said_so():
    with_gpm, without = judged("small_batch").cost, judged("small_batch", gpm=False).cost
    assert without.measure == "GPU-Util" and "upper bound" in (without.note or "")
    assert without.useful_pct > with_gpm.useful_pct  # GPU-Util 100% while a third of the SMs work


def test_the_price_comes_from_the_config_file_and_a_bad_one_is_a_clear_error(tmp_path, monkeypatch):
    from gputriage.api._common import GputriageError, configured_price

    cfg = tmp_path / "config.toml"
    monkeypatch.setenv("GPUTRIAGE_CONFIG", str(cfg))
    assert configured_price() == (None, "USD")
    cfg.write_text('[cost]\nprice_per_gpu_hour = 2.49\ncurrency = "EUR"\n')
    assert configured_price() == (2.49, "EUR")
    cfg.write_text('[cost]\nprice_per_gpu_hour = "cheap"\n')
    with pytest.raises(GputriageError, match="price_per_gpu_hour must be a number"):
        configured_price()
    cfg.write_text("[cost\n")
    with pytest.raises(GputriageError, match="cannot read the config file"):
        configured_price()


def test_show_counts_a_stored_run_again_at_another_price(tmp_path):
    from gputriage.api.run import show
    from gputriage.sampling.store import Store

    report = judged("launch_bound", price=1.0)
    store = Store(tmp_path / "runs.sqlite")
    rid = store.begin_run("run", ["python", "x.py"], report.meta)
    report.id = rid
    store.end_run(report)
    store.close()
    again = show(rid, tmp_path / "runs.sqlite", price_per_gpu_hour=4.0, currency="EUR")
    assert again.cost is not None and again.cost.currency == "EUR"
    assert again.cost.cost == pytest.approx(4 * report.cost.cost, rel=1e-3)
    assert again.cost.useful_pct == report.cost.useful_pct


def test_a_watch_carries_the_price_to_its_summary(tmp_path, monkeypatch):
    """`watch --price P` (or the config file's): the watch's report is judged at that price."""
    from gputriage.api.monitor import Monitor

    monkeypatch.setenv("GPUTRIAGE_CONFIG", str(tmp_path / "none.toml"))
    m = Monitor(store=False, kind="watch", pid=None, isolated=False, price_per_gpu_hour=2.5, currency="EUR")
    m.__enter__()
    try:
        assert m.session is not None
        assert (m.session.meta.price_per_gpu_hour, m.session.meta.currency) == (2.5, "EUR")
    finally:
        m.__exit__(None, None, None)
    (tmp_path / "c.toml").write_text("[cost]\nprice_per_gpu_hour = 4.0\n")
    monkeypatch.setenv("GPUTRIAGE_CONFIG", str(tmp_path / "c.toml"))
    m = Monitor(store=False, kind="watch", pid=None, isolated=False)
    m.__enter__()
    try:
        assert m.session is not None and m.session.meta.price_per_gpu_hour == 4.0
    finally:
        m.__exit__(None, None, None)


def test_a_gpu_that_did_no_useful_work_is_not_told_to_double_it():
    # torch.compile from cold caches on an H200: SM activity 0% over the run, the GPU waiting for the compiler;
    # "at twice the activity (0%)" said nothing
    from recordings import judged as judged_recording
    from recordings import runs

    c = judged_recording(runs("runs_host_side_live.json.gz")["compile_graph_breaks.no_profile"]).cost
    assert c is not None and c.useful_pct < 1.0 and c.gpu_hours_at_twice is None
