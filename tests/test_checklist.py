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

from gputriage.api.check import check_report, snapshot_with
from gputriage.diagnosis.check import evaluate as rules
from gputriage.diagnosis.checklist import evaluate
from gputriage.diagnosis.run.judge import judge
from gputriage.model.checklist import Status
from gputriage.model.fact import Fact
from gputriage.model.reading import Unavailable
from gputriage.model.run import RunMeta
from gputriage.model.sample import Sample
from gputriage.model.snapshot import Snapshot
from gputriage.sampling.session import replay

TYPED = json.loads(gzip.decompress((Path(__file__).parent / "fixtures" / "h200" / "runs_typed.json.gz").read_bytes()))
GT = [sys.executable, "-m", "gputriage"]


def statuses(report) -> dict[int, Status]:
    return {i.step: i.status for i in report.items}


MEASURED_BY_FULL = [
    Fact("host.fs.cwd.seq_read_mbps", 2100.0, "probe:disk"),
    Fact("host.fs.cwd.rand_read_4k_iops", 150_000.0, "probe:disk"),
]
TORCH = [
    Fact("torch.version", "2.5.1+cu124", "torch:child"),
    Fact("torch.cuda.build_version", "12.4", "torch:child"),
    Fact("torch.cuda.available", True, "torch:child"),
    Fact("torch.cuda.arch_list", ["sm_90"], "torch:child"),
    Fact("torch.cuda.error", None, "torch:child"),
]


def test_a_healthy_box_passes_what_check_measures_and_asks_the_rest(h200, collect):
    snap = snapshot_with(collect(h200), MEASURED_BY_FULL + TORCH)
    r = evaluate("box", check=check_report(snap, rules(snap)))
    assert statuses(r) == {
        1: Status.question,
        2: Status.passed,
        3: Status.passed,
        4: Status.passed,
        5: Status.passed,
        6: Status.passed,
        7: Status.question,
    }
    assert all(i.decided_by == "gputriage check" for i in r.items if i.status == Status.passed)
    # without the read probe (`--full`) and the framework probe, storage and the chain are not measured
    snap = collect(h200)
    r = evaluate("box", check=check_report(snap, rules(snap)))
    items = {i.step: i for i in r.items}
    assert items[4].status == Status.unknown and "--full" in items[4].why and not items[4].decided_by
    assert items[6].status == Status.unknown and "torch.cuda.available" in items[6].why


def test_a_box_without_a_driver_passes_nothing_it_could_not_measure(h200, collect):
    """No driver: power and cooling were not measured (no GPU was read), the driver and the chain fail, storage
    without its read probe is unknown; with an unreadable kernel log, NVRM errors and Xid are unseen."""
    snap = collect(h200.no_driver())
    r = evaluate("box", check=check_report(snap, rules(snap)))
    items = {i.step: i for i in r.items}
    assert statuses(r) == {
        1: Status.question,
        2: Status.unknown,
        3: Status.unknown,
        4: Status.unknown,
        5: Status.failed,
        6: Status.failed,
        7: Status.question,
    }
    assert "no GPU was read" in items[2].why and "no GPU was read" in items[3].why
    assert not any(i.status == Status.passed for i in r.items)


def test_an_unreadable_kernel_log_leaves_the_driver_unknown(h200, collect):
    snap = collect(h200)
    facts = [
        f if f.name != "kernel.xid_events" else Fact(f.name, Unavailable("no_permission", "dmesg: root only"), f.source)
        for f in snap.facts
    ]
    snap = snapshot_with(
        Snapshot(facts=tuple(facts), taken_at=snap.taken_at, hostname=snap.hostname, tool_version=snap.tool_version),
        TORCH,
    )
    item = {i.step: i for i in evaluate("box", check=check_report(snap, rules(snap))).items}[5]
    assert item.status == Status.unknown and "kernel.xid_events (no_permission" in item.why


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


@pytest.mark.parametrize(
    "name, failed", [("healthy", set()), ("fp32_no_tensor_cores", {2}), ("input_starved", {4}), ("vram_churn", {3})]
)
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
    r = subprocess.run(
        GT + ["checklist", "box", "--from", str(snap), "--json"], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema"] == "gputriage.checklist" and len(doc["items"]) == 7
    r = subprocess.run(
        GT + ["checklist", "training", "--store", str(tmp_path / "none.sqlite"), "--fail-on-fail"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 3 and "no such run store" in r.stderr  # a store that is not there is said
    store = tmp_path / "runs.sqlite"
    subprocess.run(
        GT + ["run", "--store", str(store), "--", sys.executable, "-c", "1"], capture_output=True, timeout=60
    )
    r = subprocess.run(
        GT + ["checklist", "training", "--store", str(store), "--fail-on-fail"],
        capture_output=True,
        text=True,
        timeout=60,
    )
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
    ids = [
        db.add_report("load", ["http://x"], msgspec.json.decode((cpu / f).read_bytes(), type=LoadReport))
        for f in ("load_transformers_serve.json", "load_capped_kv.json")
    ]
    db.close()
    items = {i.text.split(":")[0]: i for i in checklist("inference", store=tmp_path / "s.sqlite", load_id=ids[0]).items}
    tail = items["Tail metrics watched (p95/p99) and correlated with VRAM and sequence length"]
    assert tail.status == Status.passed and tail.evidence["knee"] == 8 and tail.decided_by.startswith("gputriage load")
    assert items["No OOM and no restart under load"].status == Status.passed
    assert items["A VRAM budget with headroom for peaks"].status == Status.unknown
    capped = {
        i.text.split(":")[0]: i for i in checklist("inference", store=tmp_path / "s.sqlite", load_id=ids[1]).items
    }
    assert (
        capped["Tail metrics watched (p95/p99) and correlated with VRAM and sequence length"].status == Status.unknown
    )  # no SLO was given to that load test


def test_a_run_without_a_gpu_leaves_its_gpu_items_unknown(tmp_path):
    """A run on a machine with no GPU: memory, precision and I/O are not measured (never 'peak None%'), and
    `checklist inference --run ID` reads that run and says what it lacked."""
    from gputriage import api
    from gputriage.api.checklist import checklist

    store = tmp_path / "s.sqlite"
    report = api.run([sys.executable, "-c", "pass"], store=store)
    assert not report.verdict.per_gpu  # this machine has no GPU: the run sampled none
    training = {i.step: i for i in checklist("training", run_id=report.id, store=store).items}
    assert [training[k].status for k in (2, 3, 4)] == [Status.unknown] * 3
    assert all("sampled no GPU" in training[k].why and "None" not in training[k].why for k in (2, 3, 4))
    vram = checklist("inference", run_id=report.id, store=store).items[0]
    assert vram.status == Status.unknown and f"run {report.id}" in vram.why and "--run" not in vram.why


def test_inference_reads_the_run_it_is_given(tmp_path):
    from gputriage.api.checklist import checklist
    from gputriage.sampling.store import Store

    store = tmp_path / "s.sqlite"
    db = Store(store)
    ids = []
    for name in ("healthy", "vram_churn"):
        report = _report(name)
        report.id = db.begin_run("run", ["python", "serve.py"], report.meta)
        db.end_run(report)
        ids.append(report.id)
    db.close()
    healthy, churn = (checklist("inference", run_id=i, store=store).items[0] for i in ids)
    assert healthy.status == Status.passed and healthy.decided_by == f"gputriage show {ids[0]}"
    assert churn.status == Status.failed and churn.evidence["vram_peak_pct"] >= 90
