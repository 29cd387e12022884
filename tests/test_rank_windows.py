"""Each rank of a distributed job as the sampler reads it (`sampling.rank_reader`: its stack sampler's report and its
process) and cuts it into windows (`sampling.rank_windows`): the job's ranks, not its launcher; each window's shares,
its time waiting for a CPU and on one; bounded series; the GPU each rank holds; the hangs the samples carried."""

from __future__ import annotations

import os
from typing import Any

import pytest

from gputriage.inworkload.stack_categories import COLLECTIVE_WAIT, INPUT_WAIT
from gputriage.model.ranks import RankWindow, merge_windows
from gputriage.model.sample import GpuProcess, HangEvent, RankSample, Sample, StackCounts, StackLine
from gputriage.sampling.rank_reader import NOW_STACK_AFTER_S, RankReader, chosen
from gputriage.sampling.rank_windows import ON_CPU, RUNQ, RankWindows, window


def report(rank: int, pid: int, source: str = "RANK", t_s: float = 0.0, **kw: Any) -> dict[str, Any]:
    return {
        "pid": pid,
        "t_s": t_s,
        "ticks": 100.0,
        "main": {INPUT_WAIT: 60.0, COLLECTIVE_WAIT: 40.0},
        "all": {INPUT_WAIT: 60.0, COLLECTIVE_WAIT: 40.0},
        "main_loader": 50.0,
        "main_cpu_s": 0.2,
        "wall_s": 2.0,
        "rank": {"rank": rank, "source": source, "world_size": 2, "job_id": "j1"},
        "lines": [["/u/train.py", 12, "main", COLLECTIVE_WAIT, 40, 40, 1]],
        **kw,
    }


def test_the_jobs_ranks_count_not_a_launcher_nor_a_helper_and_a_restarted_rank_by_its_newer_process():
    agent = report(0, 10, source="SLURM_PROCID")  # srun's task running torchrun: a rank to Slurm, not to torch
    worker = report(1, 13, child=True)  # a spawned DataLoader worker inherits its rank's variables
    old, new = report(1, 11, t_s=5.0), report(1, 12, t_s=9.0)
    got = chosen([agent, report(0, 14), worker, old, new])
    assert [(r["rank"]["rank"], r["pid"]) for r in got] == [(0, 14), (1, 12)]
    assert [r["pid"] for r in chosen([agent])] == [10]  # srun of Python ranks: Slurm's rank is the rank


def test_a_ranks_reading_carries_its_steps_its_waits_and_its_stack_once_it_lasted():
    now = 1000.0
    r = RankReader(clock=lambda: now, machine_cores=10_000)
    steps = {"source": "gputriage.step", "total": 12.0, "hist": [0, 0, 3.0, 9.0]}
    frames = [["/u/train.py", 30, "main"]]
    got = r.read([report(1, os.getpid(), steps=steps, main_runq_s=0.5, now=[COLLECTIVE_WAIT, now - 1, frames])])
    (x,) = got
    assert (x.rank, x.world_size, x.job_id, x.steps_total, x.step_source) == (1, 2, "j1", 12.0, "gputriage.step")
    assert x.step_hist == {"2": 3.0, "3": 9.0} and x.main_runq_s == 0.5
    assert x.stacks is not None and x.stacks.main["loader"] == 50.0 and x.stacks.lines  # lines at the first reading
    assert x.process_cpu_s is not None and x.process_cpu_s > 0  # this very process
    assert x.cores is not None  # fewer cores than the machine's 10,000
    assert x.now is not None and x.now.category == COLLECTIVE_WAIT and x.now.stack == []  # one second: no stack yet
    again = r.read([report(1, os.getpid(), now=[COLLECTIVE_WAIT, now - NOW_STACK_AFTER_S, frames])])
    assert again[0].now is not None and again[0].now.stack == ["/u/train.py:30 main"]
    assert again[0].stacks is not None and again[0].stacks.lines is None  # the lines come back a second later


def sample(rank: int, t: float, ticks: float, coll: float, cpu: float, runq: float, steps: float, **kw: Any) -> Sample:
    stacks = StackCounts(
        ticks=ticks, main={COLLECTIVE_WAIT: coll, INPUT_WAIT: ticks - coll}, main_cpu_s=cpu, wall_s=t, **kw
    )
    r = RankSample(rank=rank, pid=100 + rank, stacks=stacks, main_runq_s=runq, steps_total=steps, step_source="s")
    return Sample(t_s=t, ranks=[r], job_processes=[GpuProcess(gpu=rank, pid=100 + rank)])


def test_a_window_holds_the_main_threads_shares_its_cpu_and_its_wait_for_one():
    a, b = sample(0, 10.0, 100, 20, 1.0, 0.5, 5).ranks[0], sample(0, 11.0, 150, 45, 1.3, 0.7, 10).ranks[0]
    w = window(a, b, 10.0, 11.0)
    assert w is not None and w.samples == 50 and w.steps == 5
    assert w.shares[COLLECTIVE_WAIT] == pytest.approx(0.5)
    assert w.shares[ON_CPU] == pytest.approx(0.3) and w.shares[RUNQ] == pytest.approx(0.2)
    assert window(b, b, 11.0, 12.0) is None  # the sampler wrote nothing new


def test_each_ranks_windows_its_gpu_its_lines_and_the_hangs_carried():
    w = RankWindows(node="n1", capacity=4)
    lines = [StackLine("/u/train.py", 12, "main", COLLECTIVE_WAIT, 30.0, 30.0)]
    for i in range(12):
        s = sample(i % 2, 10.0 + i // 2, 100 + 50 * (i // 2), 20 + 25 * (i // 2), 1 + 0.3 * i, 0.1 * i, 5 * i)
        if i == 4:
            s.ranks[0].stacks.lines = lines  # type: ignore[union-attr]
        if i == 7:
            s.hang = HangEvent(t_s=s.t_s, waited_s=300.0, after_s=300.0, waiting=[0], missing=[1])
        w.add(s)
    s0, s1 = w.series()
    assert (s0.rank, s0.node, s0.gpu, s1.gpu) == (0, "n1", 0, 1)
    assert len(s0.windows) <= 4 and s0.windows[0].t0_s == 10.0 and s0.windows[-1].t1_s == 15.0  # merged, not lost
    assert [t for t, _ in s0.snapshots] == [12.0] and s1.snapshots == []
    assert [h.missing for h in w.hangs] == [[1]]


def test_merged_windows_weigh_shares_by_samples_and_sum_steps():
    a = RankWindow(t0_s=0, t1_s=1, samples=10, shares={"x": 1.0}, steps=2, step_hist={"3": 2}, cpu_pct=100)
    b = RankWindow(t0_s=1, t1_s=3, samples=30, shares={"x": 0.0, "y": 1.0}, steps=None, step_hist={"3": 1, "4": 1})
    m = merge_windows(a, b)
    assert (m.t0_s, m.t1_s, m.samples, m.steps) == (0, 3, 40, 2)
    assert m.shares == {"x": 0.25, "y": 0.75} and m.step_hist == {"3": 3, "4": 1} and m.cpu_pct is None
