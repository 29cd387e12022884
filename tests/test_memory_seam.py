"""The seam `run`'s judge calls (`diagnosis.memory.judge.memory_findings`): a snapshot the workload saved in the
run's folder, kept when the folder goes (`Recording.memory`), judged with the processes the run knows by name and
pod, and with the allocator's counters over the run as a longer view of a growth."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

from gputriage.diagnosis.memory.judge import memory_findings, named
from gputriage.inworkload import memory_history as mh
from gputriage.model.memory import MemoryDump, ProcessMemory
from gputriage.model.owner import Container, ProcessOwner
from gputriage.sampling.oom_marks import keep
from gputriage.testing.fake_allocator import FakeAllocator
from gputriage.testing.memory_cases import CAPACITY, CONTEXT, LINEAR, MIB, Stacks

BUILT = Path(__file__).parent / "fixtures" / "memory" / "built"
GIB = 1 << 30


def _saved(case: str, folder: Path, pid: int = 4100) -> None:
    """The built case's files, named as the workload's observer and the sampler name them."""
    folder.mkdir(parents=True, exist_ok=True)
    for suffix, ours in ((".pickle", mh.PICKLE), (".json", mh.MARK), (".processes.json", mh.PROCESSES)):
        shutil.copy(BUILT / f"{case}{suffix}", folder / f"{mh.OOM_PREFIX}{pid}{ours}")


def test_a_run_s_kept_snapshot_is_judged_with_the_processes_the_sampler_read(tmp_path):
    _saved("other_process", tmp_path / "progress")
    (dump,) = keep(tmp_path / "progress", tmp_path / "kept")
    report = memory_findings(dump)
    assert report is not None and report.cause == "memory.other_process"
    assert "pid 4242 (40.0 GiB)" in report.findings[0].symptom


def test_the_run_s_names_and_pods_replace_the_bare_pids(tmp_path):
    _saved("other_process", tmp_path / "progress")
    (dump,) = keep(tmp_path / "progress", tmp_path / "kept")
    named = [
        ProcessMemory(pid=4100, used_bytes=40 * GIB, own=True, name="python"),
        ProcessMemory(pid=4242, used_bytes=40 * GIB, name="vllm", owner="serving/llama-0/server"),
    ]
    report = memory_findings(dump, processes=named)
    assert report is not None and "pid 4242 vllm in serving/llama-0/server" in report.findings[0].symptom


def test_the_counters_over_the_run_show_a_growth_the_history_is_too_short_for(tmp_path):
    """A leak armed late: the history holds a few steps, the run's counters the whole rise."""
    s, a = Stacks("late"), FakeAllocator(CAPACITY, CONTEXT)
    for _ in range(40):
        a.malloc(512 * MIB, s.at(35, "step"))  # kept, before the stacks were armed
    a.record()
    for _ in range(4):
        acts = [a.malloc(256 * MIB, s.at(30, "forward", LINEAR)) for _ in range(8)]
        a.malloc(512 * MIB, s.at(35, "step"))
        a.tick(100_000)
        for addr in acts:
            a.free(addr)
        a.tick(100_000)
    path = tmp_path / f"{mh.GROWTH_PREFIX}1{mh.PICKLE}"
    path.write_bytes(pickle.dumps(a.snapshot(), protocol=4))
    dump = MemoryDump(kind="growth", pid=1, snapshot=str(path))
    samples = [(1000.0 + t, (2 + t * 0.5) * GIB + (t % 2) * GIB) for t in range(0, 80)]  # 20 GiB over 80 s, steps
    report = memory_findings(dump, samples=samples)
    assert report is not None and report.state.growth is not None and report.state.growth.source == "samples"
    grew = [f for f in report.findings if f.id == "memory.growing"]
    assert grew and grew[0].severity.value == "warn" and "late.py:35" in grew[0].symptom


def test_a_snapshot_that_cannot_be_read_leaves_the_run_s_findings_alone(tmp_path):
    bad = tmp_path / "x.pickle"
    bad.write_bytes(b"\x80\x04cos\nsystem\n.")
    assert memory_findings(MemoryDump(kind="oom", pid=1, snapshot=str(bad))) is None
    assert memory_findings(MemoryDump(kind="oom", pid=1, snapshot=str(tmp_path / "gone.pickle"))) is None


def test_the_marker_s_moment_is_what_the_report_says(tmp_path):
    _saved("too_large", tmp_path / "progress")
    (dump,) = keep(tmp_path / "progress", tmp_path / "kept")
    mark = json.loads((BUILT / "too_large.json").read_text())
    report = memory_findings(dump)
    assert report is not None and report.state.oom is not None
    assert report.state.oom.requested_bytes == mark["requested_bytes"]
    assert report.state.oom.capacity_bytes == mark["capacity_bytes"] == report.state.capacity_bytes
    assert report.state.oom.line is not None and report.state.oom.line.endswith("too_large.py:31")


def test_the_processes_are_named_from_the_run_s_owners():
    found = [ProcessMemory(pid=4242, used_bytes=GIB), ProcessMemory(pid=7, used_bytes=GIB, own=True)]
    owners = {4242: ProcessOwner(pid=4242, name="vllm", container=Container(pod="llama-0", namespace="serving"))}
    got = named(found, owners)
    assert got is not None and (got[0].name, got[0].owner) == ("vllm", "serving/llama-0") and got[1] == found[1]
    assert named(None, owners) is None
