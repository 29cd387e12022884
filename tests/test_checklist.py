"""The playbook's checklists: items decided by `check` on a machine (the recorded H200, with faults
planted) and by stored runs (H200 recordings), the rest asked; an item needing a run it was not given
is unknown, never passed."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from gputriage.api.check import check_report
from gputriage.diagnosis.check import evaluate as rules
from gputriage.diagnosis.checklist import evaluate
from gputriage.diagnosis.run.judge import judge
from gputriage.model.checklist import Status
from gputriage.model.run import RunMeta
from gputriage.model.sample import Sample
from gputriage.sampling.session import replay

TYPED = json.loads(gzip.decompress((Path(__file__).parent / "fixtures" / "h200" / "runs_typed.json.gz").read_bytes()))
GT = [sys.executable, "-m", "gputriage"]


def statuses(report) -> dict[int, Status]:
    return {i.step: i.status for i in report.items}


def test_a_healthy_box_passes_what_check_measures_and_asks_the_rest(h200, collect):
    snap = collect(h200)
    r = evaluate("box", check=check_report(snap, rules(snap)))
    assert statuses(r) == {1: Status.question, 2: Status.passed, 3: Status.passed, 4: Status.passed,
                           5: Status.passed, 6: Status.passed, 7: Status.question}
    assert all(i.decided_by == "gputriage check" for i in r.items if i.status == Status.passed)


def test_a_throttling_box_fails_cooling_and_power_with_the_findings_that_say_so(h200, collect):
    snap = collect(h200.clock_reasons(0, 0x20 | 0x8))  # thermal and hardware slowdown
    r = evaluate("box", check=check_report(snap, rules(snap)))
    items = {i.step: i for i in r.items}
    assert items[2].status == Status.failed and "clocks.hw_slowdown" in items[2].why
    assert items[3].status == Status.failed and "clocks.thermal_slowdown" in items[3].evidence["findings"]
    assert evaluate("box").items[1].status == Status.unknown  # no check given: unknown, not passed


def _report(name: str):
    rec = TYPED[name]
    return judge(replay([msgspec.convert(s, Sample) for s in rec["samples"]], msgspec.convert(rec["meta"], RunMeta)), 0)


@pytest.mark.parametrize("name, failed", [("healthy", set()), ("fp32_no_tensor_cores", {2}), ("input_starved", {4}),
                                          ("vram_churn", {3})])
def test_training_items_are_decided_by_a_recorded_run(name, failed):
    r = evaluate("training", run=_report(name), baselines=True)
    got = statuses(r)
    assert {k for k, v in got.items() if v == Status.failed} == failed
    assert got[1] == Status.question and got[5] == Status.passed
    if name == "healthy":
        assert got[2] == Status.passed and r.items[1].evidence["tensor_active_pct"] >= 30


def test_inference_vram_budget_and_no_baseline():
    churn = evaluate("inference", run=_report("vram_churn"))
    assert churn.items[0].status == Status.failed and churn.items[0].evidence["vram_peak_pct"] >= 90
    healthy = evaluate("inference", run=_report("healthy"))
    assert healthy.items[0].status == Status.passed
    assert evaluate("training", run=_report("healthy")).items[4].status == Status.failed  # no baseline kept


def test_the_command_prints_json_and_fails_on_a_failed_item(tmp_path):
    snap = Path(__file__).parent / "fixtures" / "h200" / "snapshot_busy.json"
    r = subprocess.run(GT + ["checklist", "box", "--from", str(snap), "--json"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema"] == "gputriage.checklist" and len(doc["items"]) == 7
    r = subprocess.run(GT + ["checklist", "training", "--store", str(tmp_path / "none.sqlite"), "--fail-on-fail"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 3 and "no such run store" in r.stderr  # a store that is not there is said
    store = tmp_path / "runs.sqlite"
    subprocess.run(GT + ["run", "--store", str(store), "--", sys.executable, "-c", "1"], capture_output=True,
                   timeout=60)
    r = subprocess.run(GT + ["checklist", "training", "--store", str(store), "--fail-on-fail"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "FAIL 5." in r.stdout  # no baseline kept: the gate fails
    r = subprocess.run(GT + ["checklist", "gaming"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "no checklist 'gaming'" in r.stderr


def test_inference_items_decided_by_a_stored_load_test(tmp_path):
    """A load test against `transformers serve` (recorded on the dev machine's CPU), kept in a store:
    its SLO was met up to concurrency 8, no request failed; it sampled no GPU, so VRAM stays unknown."""
    import msgspec

    from gputriage.api.checklist import checklist
    from gputriage.model.checklist import Status
    from gputriage.model.load import LoadReport
    from gputriage.sampling.store import Store

    cpu = Path(__file__).parent / "fixtures" / "cpu"
    db = Store(tmp_path / "s.sqlite")
    ids = [db.add_report("load", ["http://x"], msgspec.json.decode((cpu / f).read_bytes(), type=LoadReport))
           for f in ("load_transformers_serve.json", "load_capped_kv.json")]
    db.close()
    items = {i.text.split(":")[0]: i for i in checklist("inference", store=tmp_path / "s.sqlite", load_id=ids[0]).items}
    tail = items["Tail metrics watched (p95/p99) and correlated with VRAM and sequence length"]
    assert tail.status == Status.passed and tail.evidence["knee"] == 8 and tail.decided_by.startswith("gputriage load")
    assert items["No OOM and no restart under load"].status == Status.passed
    assert items["A VRAM budget with headroom for peaks"].status == Status.unknown
    capped = {i.text.split(":")[0]: i for i in checklist("inference", store=tmp_path / "s.sqlite",
                                                         load_id=ids[1]).items}
    assert capped["Tail metrics watched (p95/p99) and correlated with VRAM and sequence length"].status == \
        Status.unknown  # no SLO was given to that load test
