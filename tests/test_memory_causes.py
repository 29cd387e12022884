"""The kind of an out-of-memory error, named from the allocator's snapshot (`gputriage.diagnosis.memory`): each of
the five causes planted in a workload played on the model of the caching allocator gets its verdict and the line of
its planted tensor among the top three; the same workload without the cause gets another verdict, or none."""

from __future__ import annotations

import pytest

from gputriage.diagnosis.memory.judge import CAUSES, judge_snapshot
from gputriage.diagnosis.rule import rules_of
from gputriage.memory.snapshot import parse
from gputriage.model.memory import Frame, MemoryDump, MemoryReport, ProcessMemory
from gputriage.testing.fake_allocator import FakeAllocator, OutOfMemory
from gputriage.testing.memory_cases import CAPACITY, CASES, CONTEXT, GIB, LINEAR, MIB, Stacks, pending_free


def _dump(mark: dict, processes: bool = True) -> MemoryDump:
    return MemoryDump(
        kind="oom",
        pid=mark["pid"],
        snapshot="built",
        t_s=mark["t_s"],
        device=mark["device"],
        requested_bytes=mark["requested_bytes"],
        capacity_bytes=mark["capacity_bytes"],
        device_free_bytes=mark["device_free_bytes"],
        stack=[Frame(*f) for f in mark["stack"]],
        processes=[ProcessMemory(pid=p["pid"], used_bytes=p["used_bytes"], own=p["own"]) for p in mark["processes"]]
        if processes
        else None,
    )


def judged(snap: dict, mark: dict | None, processes: bool = True) -> MemoryReport:
    return judge_snapshot(parse(snap), "built", dump=_dump(mark, processes) if mark is not None else None)


def top3(report: MemoryReport) -> list[str]:
    return [f"{ln.file.rsplit('/', 1)[-1]}:{ln.line}" for ln in report.state.top_lines[:3]]


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_planted_cause_is_named_with_its_line(case):
    build, cause, line = CASES[case]
    report = judged(*build())
    assert report.cause == cause, report.summary
    asked = report.state.oom.line.rsplit("/", 1)[-1] if report.state.oom and report.state.oom.line else None
    assert line in top3(report) or line == asked, (top3(report), asked)
    named = [f for f in report.findings if f.id in CAUSES and f.severity.value == "critical"]
    assert [f.id for f in named] == [cause]  # one cause, never two


def test_the_five_causes_are_the_rules_of_memory():
    assert {r.id for r in rules_of("memory")} == set(CASES_IDS := [c[1] for c in CASES.values()]) == set(CAUSES)
    assert len(CASES_IDS) == 5


def test_without_the_processes_read_the_other_process_is_not_named():
    """NVML not read at the error: the memory the other job held is unknown; what is seen is a peak at capacity
    (of what this process could have)."""
    report = judged(*CASES["other_process"][0](), processes=False)
    assert report.cause == "memory.peak_near_capacity"
    assert report.state.other_processes_bytes is None


def test_a_request_that_is_most_of_the_gpu_is_named_too_large():
    s, a = Stacks("most"), FakeAllocator(CAPACITY, CONTEXT)
    a.record()
    for _ in range(40):
        a.malloc(GIB, s.at(20, "build", LINEAR))
    with pytest.raises(OutOfMemory) as oom:
        a.malloc(45 * GIB, s.at(31, "forward", LINEAR))
    mark = {
        "pid": 1,
        "t_s": 1.0,
        "device": 0,
        "requested_bytes": oom.value.requested,
        "capacity_bytes": CAPACITY,
        "device_free_bytes": oom.value.device_free,
        "stack": [[f["filename"], f["line"], f["name"]] for f in s.at(31, "forward", LINEAR)],
        "processes": [],
    }
    report = judged(a.snapshot(), mark)
    assert report.cause == "memory.request_too_large"
    assert "% of all the GPU could give" in report.findings[0].symptom


def test_losses_kept_as_numbers_do_not_grow_and_do_not_fail():
    s, a = Stacks("fixed"), FakeAllocator(CAPACITY, CONTEXT)
    a.record()
    for _ in range(16):
        a.malloc(512 * MIB, s.at(20, "build", LINEAR))
    for _ in range(200):
        acts = [a.malloc(256 * MIB, s.at(30, "forward", LINEAR)) for _ in range(8)]
        loss = a.malloc(768 * MIB, s.at(35, "step"))
        a.tick(100_000)
        for addr in [*acts, loss]:  # loss.item(): nothing kept
            a.free(addr)
        a.tick(100_000)
    report = judged(a.snapshot(), None)
    assert report.state.oom is None and report.cause is None
    assert "memory.growing" not in {f.id for f in report.findings}


def test_a_leak_that_has_not_failed_yet_is_named_with_its_lines():
    """What `run.vram_growing` gets from a growth snapshot: the lines that hold the growth, without an error."""
    s, a = Stacks("leak"), FakeAllocator(CAPACITY, CONTEXT)
    a.record()
    for _ in range(60):
        acts = [a.malloc(256 * MIB, s.at(30, "forward", LINEAR)) for _ in range(8)]
        a.malloc(512 * MIB, s.at(35, "step"))  # kept
        a.tick(100_000)
        for addr in acts:
            a.free(addr)
    report = judged(a.snapshot(), None)
    grew = [f for f in report.findings if f.id == "memory.growing"]
    assert grew and grew[0].severity.value == "warn"
    assert report.state.growth_lines[0].line == 35
    # from the first trough (the first event: no loss kept yet) to the end
    assert report.state.growth_lines[0].growth_bytes == 60 * 512 * MIB
    assert "leak.py:35" in grew[0].symptom


def test_a_request_that_fits_a_hole_of_the_fragmented_cache_does_not_fail():
    snap, mark = CASES["fragmented"][0]()
    report = judged(snap, mark)
    assert 0 < report.state.largest_free_bytes < mark["requested_bytes"]
    assert report.state.fragmentation is not None and report.state.fragmentation > 0.9
    assert report.state.cached_free_bytes >= mark["requested_bytes"] - mark["device_free_bytes"]


def test_an_error_the_snapshot_does_not_account_for_names_no_cause():
    """Most of what the allocator holds is freed but awaits another stream's work (a tensor used on a side stream,
    `record_stream`): not live, not free, and no cause of the five."""
    snap, mark = pending_free()
    report = judged(snap, mark)
    assert report.state.pending_free_bytes == 60 * GIB
    assert report.cause is None and "no cause named" in report.summary and "another stream" in report.summary
