"""An out-of-memory error explained in the run's report (`run`, `monitor()`, `show`): the allocator's snapshot the
workload saved at the error, judged by the memory judge, names the cause and the Python lines that filled the GPU —
in the findings, the terminal, the JSON and the HTML page. On the five planted errors recorded on an H100 under
`gputriage run` (`gputriage.testing.oom_runs`: the snapshot, its marker and the processes as recorded, the run's
samples rebuilt from its report of that time)."""

from __future__ import annotations

import gzip
import io
import json
import pickle
import shutil
import sqlite3
from pathlib import Path

import msgspec
import pytest
from rich.console import Console

import gputriage
from gputriage.api.run import show
from gputriage.diagnosis.memory.judge import CAUSES as MEMORY_CAUSES
from gputriage.diagnosis.run.judge import judge
from gputriage.diagnosis.run.rules.out_of_memory import CAUSES as NAMED_CAUSES
from gputriage.diagnosis.run.rules.out_of_memory import DECISION, RULE
from gputriage.diagnosis.run.snapshots import gpu_of, live_samples
from gputriage.inworkload import memory_history as mh
from gputriage.model.memory import MemoryDump, MemoryReport
from gputriage.model.run import GpuVerdict, ProcessSummary, RunReport
from gputriage.report.html import render_html
from gputriage.report.run_terminal import render
from gputriage.sampling.oom_marks import kept_folder
from gputriage.sampling.session import replay
from gputriage.sampling.store import Store
from gputriage.testing.memory_cases import CAPACITY, pending_free
from gputriage.testing.oom_runs import CASES, H100, recorded_report, recording, samples

GIB = 1 << 30
FIRST = H100 / "first"  # the first recording of two cases, by a version that stored no memory report


def finding(report: RunReport, fid: str):
    return next((f for f in report.findings if f.id == fid), None)


def planted_shown(memory: MemoryReport, planted: str) -> bool:
    """The planted line among the top three live lines, the lines that grew, or the line that asked (as
    `benchmarks/record_oom.py` checks the verdict of `gputriage memory`)."""
    s = memory.state
    shown = [f"{Path(ln.file).name}:{ln.line}" for ln in (s.top_lines[:3] + s.growth_lines[:3])]
    asked = Path(s.oom.line).name if s.oom is not None and s.oom.line else ""
    return planted in shown or planted == asked


@pytest.fixture(scope="module")
def judged() -> dict[str, RunReport]:
    out = {}
    for case in CASES:
        rec, code = recording(case)
        out[case] = judge(rec, code)
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_run_names_the_cause_and_the_planted_line_of_each_recorded_error(judged, case):
    cause, planted = CASES[case]
    report = judged[case]
    oom = finding(report, "run.out_of_memory")
    assert oom is not None and oom.severity.value == "critical"
    assert oom.evidence["cause"] == cause and oom.evidence["snapshot"].endswith(f"{case}.oom.pickle.gz")
    assert cause in oom.decision and oom.evidence["snapshot"] in oom.decision
    assert "smaller batch" not in oom.decision  # the generic fixes only where no cause is named
    named = finding(report, cause)
    assert named is not None and named.subject == "gpu.0" and named.severity.value == "critical"
    assert report.memory is not None and report.memory.cause == cause
    assert planted_shown(report.memory, planted), (case, planted)


@pytest.mark.parametrize("case", sorted(set(CASES) - {"other_process"}))
def test_the_rebuilt_run_is_judged_as_it_was_on_the_h100(judged, case):
    """The samples rebuilt from the report of that time give the same verdict and the same error as it said."""
    then, now = recorded_report(case), judged[case]
    assert now.verdict.per_gpu["0"].summary == then.verdict.per_gpu["0"].summary
    before, after = finding(then, "run.out_of_memory"), finding(now, "run.out_of_memory")
    assert before is not None and after is not None
    for key in ("ooms", "requested_mib", "allocator_reserved_max_gib"):
        assert after.evidence[key] == before.evidence[key]


def test_an_error_the_counters_missed_is_seen_from_its_snapshot():
    """other_process.py failed 4 s in, before the allocator's counters were read: the report of its first recording
    (by a version that did not judge snapshots) had no out-of-memory finding and said its output would say why; the
    snapshot it saved says it."""
    then = recorded_report("other_process", FIRST)
    now = judge(*recording("other_process", FIRST))
    assert finding(then, "run.out_of_memory") is None and "its output says why" in then.verdict.per_gpu["0"].summary
    assert "out of GPU memory" in now.verdict.per_gpu["0"].summary
    oom = finding(now, "run.out_of_memory")
    assert oom is not None and oom.evidence["ooms"] == 1 and oom.evidence["requested_mib"] == 1024
    named = finding(now, "memory.other_process")
    assert named is not None and "pid 567 python3" in named.symptom  # named from the run's owners


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_terminal_and_the_json_print_the_cause_and_the_top_lines(judged, case):
    cause, planted = CASES[case]
    report = judged[case]
    out = io.StringIO()
    render(report, Console(file=out, width=160, color_system=None))
    text = out.getvalue()
    assert "GPU memory at the out-of-memory error" in text and f"cause: {cause}" in text
    assert "Top live allocations by Python line" in text and report.memory is not None
    top = report.memory.state.top_lines[0]
    assert f"{Path(top.file).name}" in text and report.memory.source in text.replace("\n", "")
    again = msgspec.json.decode(msgspec.json.encode(report), type=RunReport)
    assert again.memory is not None and again.memory.cause == cause
    data = json.loads(msgspec.json.encode(report))
    assert data["memory"]["state"]["top_lines"][0]["bytes"] == top.bytes


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_html_page_draws_the_live_memory_by_line_and_the_segment_map(judged, case):
    report = judged[case]
    page = render_html(report)
    assert report.memory is not None
    assert "GPU memory at the out-of-memory error" in page and "Segment map at the failure" in page
    assert "Top live allocations by Python line" in page
    if report.memory.state.series is not None:  # where the history was recorded
        assert "Live memory over time, in all and by line" in page
    else:
        assert "No history recorded" in page
    assert page.count('class="stack"') >= len(report.memory.state.segment_map)


def test_a_monitored_block_that_ran_out_of_memory_is_explained_too():
    rec, _ = recording("peak")
    rec.kind = "monitor"
    report = judge(rec, None)
    oom = finding(report, "run.out_of_memory")
    assert oom is not None and oom.evidence["cause"] == "memory.peak_near_capacity"
    assert report.memory is not None and report.memory.cause == "memory.peak_near_capacity"


def test_a_watch_names_no_out_of_memory_error():
    rec, _ = recording("peak")
    rec.kind = "watch"
    assert finding(judge(rec, None), "run.out_of_memory") is None


def test_without_a_snapshot_the_error_keeps_its_generic_fixes():
    rec, code = recording("peak")
    rec.memory = []
    report = judge(rec, code)
    oom = finding(report, "run.out_of_memory")
    assert oom is not None and oom.decision == DECISION and "snapshot" not in oom.evidence
    assert report.memory is None and finding(report, "memory.peak_near_capacity") is None


def test_a_snapshot_that_cannot_be_read_is_still_pointed_to(tmp_path):
    rec, code = recording("peak")
    bad = tmp_path / "memory-oom.619.pickle"
    bad.write_bytes(b"\x80\x04cos\nsystem\n.")
    rec.memory = [msgspec.structs.replace(rec.memory[0], snapshot=str(bad))]
    report = judge(rec, code)
    oom = finding(report, "run.out_of_memory")
    assert oom is not None and oom.evidence["snapshot"] == str(bad) and "cause" not in oom.evidence
    assert oom.decision.startswith(DECISION) and str(bad) in oom.decision
    assert report.memory is None


def test_an_error_the_snapshot_does_not_account_for_gives_the_generic_fixes_and_the_snapshot(tmp_path):
    """Most of what the allocator holds is freed but awaits another stream: no cause of the five."""
    snap, mark = pending_free()
    path = tmp_path / f"{mh.OOM_PREFIX}619{mh.PICKLE}"
    path.write_bytes(pickle.dumps(snap, protocol=4))
    rec, code = recording("peak")
    rec.memory = [
        MemoryDump(
            kind="oom",
            pid=619,
            snapshot=str(path),
            device=0,
            requested_bytes=mark["requested_bytes"],
            capacity_bytes=CAPACITY,
            device_free_bytes=mark["device_free_bytes"],
        )
    ]
    report = judge(rec, code)
    oom = finding(report, "run.out_of_memory")
    assert oom is not None and "cause" not in oom.evidence and oom.decision.startswith(DECISION)
    assert str(path) in oom.decision
    assert report.memory is not None and report.memory.cause is None and "no cause named" in report.memory.summary
    text = io.StringIO()
    render(report, Console(file=text, width=160, color_system=None))
    assert "cause: none named" in text.getvalue()


def test_each_cause_the_memory_judge_names_has_its_words_in_the_run():
    assert {c.split(".", 1)[1] for c in MEMORY_CAUSES} == set(NAMED_CAUSES)
    assert {f"named_{c}" for c in NAMED_CAUSES} <= set(RULE.spec.says)


def test_a_snapshot_is_of_the_gpu_its_process_held():
    dump = MemoryDump(kind="oom", pid=7, snapshot="x", device=0)  # CUDA_VISIBLE_DEVICES=3: CUDA's 0 is NVML's 3
    held = [ProcessSummary(gpu=3, pid=7, job=True), ProcessSummary(gpu=1, pid=8, job=True)]
    assert gpu_of(dump, held, [1, 3]) == 3
    assert gpu_of(dump, [], [5]) == 5  # one GPU used
    assert gpu_of(MemoryDump(kind="oom", pid=9, snapshot="x", device=1), [], [0, 1]) == 1
    assert gpu_of(MemoryDump(kind="oom", pid=9, snapshot="x", device=4), [], [0, 1]) is None


def test_the_live_bytes_a_snapshot_is_judged_with_are_those_after_the_start_up_and_before_it():
    report = recorded_report("peak")
    rebuilt = samples(report)
    for i, s in enumerate(rebuilt):
        assert s.workload is not None
        s.workload.allocator_allocated_bytes = float(i * GIB)
    rec = replay(rebuilt, report.meta, kind="run", command=report.command)
    v = GpuVerdict(gpu=0, startup_s=2.0, shutdown_s=0.0)
    started = rec.started_s or 0.0
    points = live_samples(rec, v, 0, until_s=started + 6.0)
    assert points and all(started + 2.0 <= t <= started + 6.0 for t, _ in points)
    assert [b for _, b in points] == sorted(b for _, b in points)
    assert len(live_samples(rec, v, 0, until_s=None)) > len(points)


def _store_with(tmp_path: Path, report: RunReport, folder: Path = H100) -> Path:
    """A store holding one run with its samples and a report, and its snapshot kept beside the store."""
    path = tmp_path / "runs.sqlite"
    db = Store(path)
    run_id = db.begin_run("run", report.command, report.meta)
    db.add_samples(run_id, samples(report))
    report.id = run_id
    db.end_run(report)
    db.close()
    kept = kept_folder(path, run_id)
    kept.mkdir(parents=True)
    for suffix, ours in ((".oom.pickle.gz", mh.PICKLE + ".gz"), (".oom.json", mh.MARK)):
        shutil.copy(folder / f"fragmented{suffix}", kept / f"{mh.OOM_PREFIX}494{ours}")
    return path


def test_show_gives_the_stored_run_s_verdict_on_its_snapshot(tmp_path, judged):
    report = msgspec.json.decode(msgspec.json.encode(judged["fragmented"]), type=RunReport)
    path = _store_with(tmp_path, report)
    shown = show(1, path)
    assert shown.memory is not None and shown.memory.cause == "memory.fragmented"
    assert finding(shown, "run.out_of_memory").evidence["cause"] == "memory.fragmented"


def test_show_adds_the_verdict_on_a_kept_snapshot_to_a_run_stored_before_it_was_judged(tmp_path):
    report = recorded_report("fragmented", FIRST)  # as its first recording stored it: no memory report
    path = _store_with(tmp_path, report, FIRST)
    shown = show(1, path)
    assert shown.memory is not None and shown.memory.cause == "memory.fragmented"
    assert shown.memory.source.startswith(str(tmp_path))
    assert any("judged before its allocator's snapshots" in n for n in shown.notes)
    assert [f.id for f in shown.findings] == [f.id for f in report.findings]  # its findings as they were


def test_show_judges_a_damaged_report_again_with_the_kept_snapshot(tmp_path):
    report = recorded_report("fragmented")
    path = _store_with(tmp_path, report)
    con = sqlite3.connect(path)
    con.execute("UPDATE runs SET report = ? WHERE id = 1", ('{"schema": "gputriage.run", "verdict": 5}',))
    con.commit()
    con.close()
    shown = show(1, path)
    assert finding(shown, "memory.fragmented") is not None
    assert shown.memory is not None and shown.memory.cause == "memory.fragmented"


def test_a_monitor_block_keeps_the_snapshot_its_error_saved_and_explains_it(tmp_path):
    """A block of code under `gputriage.monitor()` whose allocator saved a snapshot at an error (the recorded one,
    as the observer names its files): kept beside the store, judged, its cause in the block's report."""
    store = tmp_path / "runs.sqlite"
    with gputriage.monitor(store=store, isolated=False, period_s=0.05) as m:
        folder = Path(m._allocator_dir)
        for suffix, ours in ((".oom.pickle.gz", mh.PICKLE), (".oom.json", mh.MARK)):
            data = (H100 / f"peak{suffix}").read_bytes()
            (folder / f"{mh.OOM_PREFIX}619{ours}").write_bytes(gzip.decompress(data) if suffix.endswith("gz") else data)
    report = m.report
    assert report is not None and report.kind == "monitor"
    assert report.memory is not None and report.memory.cause == "memory.peak_near_capacity"
    oom = finding(report, "run.out_of_memory")
    assert oom is not None and oom.evidence["cause"] == "memory.peak_near_capacity"
    assert Path(oom.evidence["snapshot"]).parent == kept_folder(store, report.id)
    assert Path(oom.evidence["snapshot"]).exists() and not folder.exists()
