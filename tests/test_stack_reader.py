"""What the sampler makes of the stack sampler's reports (`sampling.progress`): the processes that count, the main
thread's shares corrected by its CPU time, the window's shares, and the top lines carried now and then."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputriage.model.sample import Sample, StackCounts, WorkloadSample
from gputriage.sampling.progress import LINES_EVERY_MAX_S, ProgressReader, main_shares, merged_stacks, others_busy
from gputriage.sampling.windows import Windower


def report(
    pid: int,
    ticks: float,
    main: dict[str, float],
    every: dict[str, float] | None = None,
    *,
    cuda: bool = False,
    child: bool = False,
    cpu_s: float | None = 0.5,
    wall_s: float = 1.0,
    lines: list[list[object]] | None = None,
) -> dict[str, object]:
    return {
        "pid": pid,
        "ticks": ticks,
        "main": main,
        "all": every or main,
        "main_loader": main.get("loader", 0.0),
        "main_cpu_s": cpu_s,
        "wall_s": wall_s,
        "cuda": cuda,
        "child": child,
        "lines": lines or [],
    }


def test_the_processes_that_initialized_cuda_count_else_those_multiprocessing_did_not_start():
    launcher = report(1, 100, {"input_wait": 100})  # torchrun's agent: waits on its ranks
    rank = report(2, 100, {"launch": 80, "gpu_wait": 20}, cuda=True)
    worker = report(3, 100, {"input_wait": 100}, child=True)  # a spawned DataLoader worker
    assert merged_stacks([launcher, rank, worker], False).main["launch"] == 80
    assert merged_stacks([launcher, rank, worker], False).main["input_wait"] == 0
    cpu_only = merged_stacks([launcher, worker], False)
    assert cpu_only is not None and cpu_only.ticks == 100 and cpu_only.main["input_wait"] == 100
    assert merged_stacks([], True) is None


def test_lines_of_several_processes_are_summed_and_bounded():
    a = report(1, 10, {"host_compute": 10}, lines=[["t.py", 3, "f", "host_compute", 10, 10]], cuda=True)
    b = report(2, 10, {"host_compute": 10}, lines=[["t.py", 3, "f", "host_compute", 6, 8], ["bad"]], cuda=True)
    merged = merged_stacks([a, b], True)
    assert merged is not None and merged.lines is not None
    assert [(x.file, x.line, x.main, x.all) for x in merged.lines] == [("t.py", 3, 16.0, 18.0)]
    assert merged.main_cpu_s == 1.0 and merged.wall_s == 2.0


def test_a_thread_seen_waiting_more_than_its_time_off_the_cpu_gets_its_running_back():
    # seen waiting on the queue in 90 of 100 samples, building lists in 10, but on the CPU 30% of the time
    shares = main_shares({"input_wait": 90, "host_compute": 10, "loader": 0}, 100, cpu_s=0.3, wall_s=1.0)
    assert shares["input_wait"] == pytest.approx(0.7)
    assert shares["host_compute"] == pytest.approx(0.3)
    assert sum(v for k, v in shares.items() if k != "loader") == pytest.approx(1.0)
    # never seen running: its CPU time goes to host computation
    assert main_shares({"input_wait": 50}, 50, cpu_s=0.2, wall_s=1.0)["host_compute"] == pytest.approx(0.2)
    # a DataLoader's share of the waits shrinks with them
    assert main_shares({"input_wait": 100, "loader": 100}, 100, 0.5, 1.0)["loader"] == pytest.approx(0.5)


def test_shares_stand_where_the_waits_fit_the_time_off_the_cpu():
    # a thread spinning in a sync is on the CPU while it waits: gpu_wait is not corrected
    shares = main_shares({"gpu_wait": 60, "launch": 40}, 100, cpu_s=1.0, wall_s=1.0)
    assert shares["gpu_wait"] == pytest.approx(0.6) and shares["launch"] == pytest.approx(0.4)
    assert main_shares({"input_wait": 80, "launch": 20}, 100, cpu_s=None, wall_s=None)["input_wait"] == 0.8
    assert main_shares({}, 0, None, None) == {}


def test_other_threads_at_work():
    main = {"input_wait": 100, "host_compute": 0}
    every = {"input_wait": 200, "host_compute": 90, "launch": 0}
    assert others_busy(main, every, 100) == pytest.approx(0.9)
    assert others_busy(main, main, 0) is None


def sample(t: float, ticks: float, main: dict[str, float], cpu_s: float, lines: bool = False) -> Sample:
    counts = StackCounts(ticks=ticks, main=main, all=main, main_cpu_s=cpu_s, wall_s=t)
    if lines:
        counts.lines = []
    return Sample(t_s=t, workload=WorkloadSample(stacks=counts))


def test_a_window_holds_the_main_thread_s_shares_from_the_counts_across_it():
    w = Windower([])
    # cumulative counts: 100 samples a second, 80% seen waiting for input; on the CPU 40% of the time
    for i in range(0, 31):
        t = i * 0.1
        w.add(sample(t, 10 * i, {"input_wait": 8 * i, "host_compute": 2 * i}, 0.04 * i, lines=i % 10 == 0))
    w.close()
    first = w.host[1]
    assert first.host_stack_samples == pytest.approx(100, abs=10)
    assert first.host_input_wait_share == pytest.approx(0.6, abs=0.01)
    assert first.host_compute_share == pytest.approx(0.4, abs=0.01)
    assert first.host_gpu_wait_share == 0 and first.host_others_busy == 0
    assert [t for t, _ in w.stack_snapshots()] == [0.0, 1.0, 2.0, 3.0]


def test_windows_without_a_report_have_no_shares():
    w = Windower([])
    for i in range(30):
        w.add(Sample(t_s=i * 0.1, workload=WorkloadSample(cpu_pct=50.0)))
    w.close()
    assert all(x.host_input_wait_share is None for x in w.host)
    assert w.stack_snapshots() == []


def test_the_reader_carries_the_top_lines_now_and_then(tmp_path: Path):
    now = [0.0]
    reader = ProgressReader(tmp_path, clock=lambda: now[0])
    assert reader.stacks() is None
    path = tmp_path / "stacks.7.json"
    path.write_text(json.dumps(report(7, 10, {"host_compute": 10}, lines=[["t.py", 1, "f", "host_compute", 10, 10]])))
    carried = []
    for step in range(4000):
        now[0] = step * 0.2
        got = reader.stacks()
        assert got is not None and got.ticks == 10
        if got.lines is not None:
            carried.append(now[0])
    gaps = [b - a for a, b in zip(carried, carried[1:])]
    assert carried[0] == 0.0 and min(gaps) >= 1.0 and max(gaps) <= LINES_EVERY_MAX_S + 0.2
    assert len(carried) < 800 / 1.0 / 4  # far fewer than one a second over 800 s
    path.write_text("{not json")  # a report being written: the last one read stands
    assert reader.stacks() is not None
