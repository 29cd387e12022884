"""A rank of a distributed job seen from inside it (`inworkload.rank_clock`, run by the stack sampler): who it is by
its launcher's variables, its steps (its `gputriage.step()` counter, else its main loop's backward jumps), the time
its main thread blocked in a data-parallel backward (its gradients' collectives), where it is now; and the sampler's
collective_wait category (torch.distributed's frames, a `work.wait()`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pytest

from gputriage.inworkload import rank_clock, stack_classify, stack_sampler
from gputriage.inworkload.rank_clock import RankClock, identity, stack, step_bin
from gputriage.inworkload.stack_categories import CATEGORIES, COLLECTIVE_WAIT

TORCH = "/venv/lib/python3.11/site-packages/torch"
USER_KIND = stack_classify.USER


@dataclass(frozen=True)
class Code:
    co_filename: str
    co_name: str = "f"


@dataclass
class Frame:
    """A frame as the sampler reads one (py-spy's frames are read through the same shape)."""

    f_code: Code
    f_lineno: int
    f_back: Optional[Frame] = None
    f_lasti: int = 0


def chain(*frames: tuple[str, int, str]) -> Frame:
    """Frames given outermost first; the innermost returned."""
    inner: Optional[Frame] = None
    for path, line, name in frames:
        inner = Frame(Code(path, name), line, inner)
    assert inner is not None
    return inner


def test_a_rank_is_who_its_launcher_says_torchs_variables_first():
    torchrun = {"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "8", "TORCHELASTIC_RUN_ID": "job7", "SLURM_PROCID": "0"}
    assert identity(torchrun) == {"rank": 3, "source": "RANK", "local_rank": 1, "world_size": 8, "job_id": "job7"}
    ompi = {"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_SIZE": "6"}
    assert identity(ompi) == {"rank": 5, "source": "OMPI_COMM_WORLD_RANK", "local_rank": 1, "world_size": 6}
    slurm = {"SLURM_PROCID": "2", "SLURM_NTASKS": "4", "SLURM_JOB_ID": "991", "GPUTRIAGE_JOB_ID": "mine"}
    assert identity(slurm) == {"rank": 2, "source": "SLURM_PROCID", "world_size": 4, "job_id": "mine"}
    assert identity({"PMI_RANK": "x"}) is None  # not a number
    assert identity({"PATH": "/bin"}) is None


def test_step_durations_fall_in_bins_a_quarter_octave_wide():
    assert step_bin(0.0005) == 0
    assert step_bin(0.050) < step_bin(0.060) < step_bin(0.100)
    assert step_bin(0.100) - step_bin(0.050) == rank_clock.BINS_PER_OCTAVE  # twice as long: one octave up
    assert step_bin(1e9) == rank_clock.STEP_BINS - 1


def _clock(monkeypatch: pytest.MonkeyPatch, readings: list[tuple[int, int]] | None = None) -> RankClock:
    """A clock whose main thread's schedstat reads `readings` in turn (ns on a CPU, ns waiting for one)."""
    feed = iter(readings or [])
    monkeypatch.setattr(rank_clock, "_schedstat", lambda fd: next(feed, None))
    c = RankClock({"rank": 1, "source": "RANK"}, 1, None, lambda p: USER_KIND if p.startswith("/u/") else 2)
    c.fd = 99  # read through the stand-in above
    return c


def test_steps_are_timed_from_the_workloads_counter(monkeypatch: pytest.MonkeyPatch):
    progress = types.SimpleNamespace(_view=[0.0], _pid=os.getpid())
    monkeypatch.setitem(sys.modules, "gputriage.inworkload.progress", progress)
    c = _clock(monkeypatch)
    for i, steps in enumerate([0, 1, 1, 2, 4, 4, 5]):  # rounds 20 ms apart
        progress._view[0] = float(steps)
        c.tick(i * 0.020, None, 0)
    assert c.source == "gputriage.step" and c.steps == 5
    assert c.hist[step_bin(0.020)] == 1  # 0 -> 1 in one round
    assert c.hist[step_bin(0.040)] == 2  # 1 -> 2 and 4 -> 5, each over two rounds
    assert c.hist[step_bin(0.010)] == 2  # 2 -> 4 in one round: two steps of 10 ms


def test_without_a_counter_the_main_loops_backward_jumps_are_its_steps(monkeypatch: pytest.MonkeyPatch):
    c = _clock(monkeypatch)
    loop = Frame(Code("/u/train.py", "main"), 10, Frame(Code("/u/train.py", "<module>"), 40))
    lines = [10, 11, 12] * 6  # one iteration every 3 rounds of 20 ms
    for i, line in enumerate(lines):
        loop.f_lineno = line
        c.tick(i * 0.020, Frame(Code(f"{TORCH}/nn/modules/linear.py", "forward"), 5, loop), 0)
    assert c.source == "main loop" and c.loop is loop
    assert c.steps == 5 - rank_clock.LOOP_JUMPS  # five iterations seen; those that found the loop are not timed
    assert c.hist[step_bin(0.060)] == c.steps


def test_a_backwards_blocked_time_is_its_collectives_wait(monkeypatch: pytest.MonkeyPatch):
    # 20 ms apart: 5 ms on a CPU and 1 ms waiting for one, so 14 of 20 ms blocked
    c = _clock(monkeypatch, [(0, 0), (5_000_000, 1_000_000), (10_000_000, 2_000_000)])
    c.split = ((stack_sampler._LAUNCH, stack_sampler._HOST), stack_sampler._COLLECTIVE)
    added: list[tuple[int, float]] = []
    counts = types.SimpleNamespace(add=lambda cat, line, main, loader, weight=1.0: added.append((cat, weight)))
    backward = chain(("/u/train.py", 12, "main"), (f"{TORCH}/autograd/graph.py", 768, "_engine_run_backward"))
    c.blocked(0.0)  # the first reading
    c.count(0.020, backward, (stack_sampler._HOST, ("/u/train.py", 12, "main"), False), counts, True)
    assert added == [(stack_sampler._COLLECTIVE, pytest.approx(0.7)), (stack_sampler._HOST, pytest.approx(0.3))]
    assert c.now == stack_sampler._COLLECTIVE and c.since_t == 0.020
    added.clear()  # without a process group, the same time is the backward's own
    c.count(0.040, backward, (stack_sampler._HOST, ("/u/train.py", 12, "main"), False), counts, False)
    assert added == [(stack_sampler._HOST, 1.0)]


def test_torch_distributeds_frames_are_a_collective_wait_not_its_launcher_nor_an_import(tmp_path: Path):
    classify = stack_classify.Classifier().classify
    user = ("/u/train.py", 30, "main")
    c10d = (f"{TORCH}/distributed/distributed_c10d.py", 2800, "all_reduce")
    wrapped = (f"{TORCH}/distributed/c10d_logger.py", 81, "wrapper")
    assert CATEGORIES[classify(chain(user, wrapped, c10d), False)[0]] == COLLECTIVE_WAIT
    assert classify(chain(user, wrapped, c10d), False)[1] == user  # named at the workload's line
    agent = (f"{TORCH}/distributed/elastic/agent/server/api.py", 900, "_invoke_run")
    assert (
        CATEGORIES[classify(chain(user, agent, ("/usr/lib/python3.11/time.py", 1, "x")), False)[0]] != COLLECTIVE_WAIT
    )
    imported = (f"{TORCH}/distributed/__init__.py", 12, "<module>")
    assert CATEGORIES[classify(chain(user, imported), False)[0]] != COLLECTIVE_WAIT
    fsdp_forward = chain(user, (f"{TORCH}/distributed/fsdp/fully_sharded_data_parallel.py", 850, "forward"), user)
    assert CATEGORIES[classify(fsdp_forward, False)[0]] != COLLECTIVE_WAIT  # compute under FSDP is not a wait
    script = tmp_path / "train.py"
    script.write_text("work = dist.all_reduce(t, async_op=True)\nwork.wait()\n")
    waits = chain((str(script), 2, "main"))
    plain = stack_classify.Classifier()
    assert CATEGORIES[plain.classify(waits, False)[0]] != COLLECTIVE_WAIT  # no process group: not known to be one
    ranked = stack_classify.Classifier()
    ranked.distributed = True
    assert CATEGORIES[ranked.classify(waits, False)[0]] == COLLECTIVE_WAIT


def test_a_report_says_who_the_rank_is_its_steps_and_where_it_is_now(monkeypatch: pytest.MonkeyPatch):
    c = _clock(monkeypatch, [(0, 3_000_000_000)])
    c.source, c.steps, c.hist[7] = "gputriage.step", 4.0, 4.0
    c.tick(5.0, None, CATEGORIES.index(COLLECTIVE_WAIT))
    where = chain(("/u/train.py", 30, "main"), ("/u/train.py", 7, "step"), ("/usr/lib/python3.11/threading.py", 3, "w"))
    got = c.report(6.0, {1: where}, CATEGORIES)
    assert got["rank"] == {"rank": 1, "source": "RANK"} and got["main_runq_s"] == 3.0
    assert got["steps"]["total"] == 4.0 and got["steps"]["hist"][7] == 4.0
    category, since, frames = got["now"]
    assert category == COLLECTIVE_WAIT and since == 5.0
    assert frames[0] == ["/usr/lib/python3.11/threading.py", 3, "w"]  # the innermost, then the others' code
    assert frames[1:] == [["/u/train.py", 7, "step"], ["/u/train.py", 30, "main"]]
    assert len(stack(chain(*[("/u/a.py", i, "f") for i in range(50)]))) == rank_clock.STACK_FRAMES


SAMPLED = """
import importlib.util, json, os, sys, time
spec = importlib.util.spec_from_file_location("gputriage_stack_sampler", sys.argv[1])
m = importlib.util.module_from_spec(spec); sys.modules[spec.name] = m; spec.loader.exec_module(m)
m.main()
import gputriage
report = os.path.join(os.environ["GPUTRIAGE_PROGRESS_DIR"], f"stacks.{os.getpid()}.json")
deadline = time.monotonic() + 60
while time.monotonic() < deadline:  # until the sampler has timed steps (however loaded the machine)
    gputriage.step()
    time.sleep(0.005)
    try:
        if json.load(open(report)).get("steps", {}).get("total", 0) >= 2:
            break
    except (OSError, ValueError):
        pass
"""


def test_the_sampler_of_a_rank_reports_it_from_inside_the_workload(tmp_path: Path):
    env = dict(os.environ, GPUTRIAGE_PROGRESS_DIR=str(tmp_path), RANK="1", LOCAL_RANK="1", WORLD_SIZE="2")
    env["TORCHELASTIC_RUN_ID"] = "abc"
    sampler = Path(stack_sampler.__file__)
    out = subprocess.run([sys.executable, "-c", SAMPLED, str(sampler)], env=env, capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr
    (report,) = [json.loads(p.read_text()) for p in tmp_path.glob("stacks.*.json")]
    assert report["rank"] == {"rank": 1, "source": "RANK", "local_rank": 1, "world_size": 2, "job_id": "abc"}
    assert report["steps"]["source"] == "gputriage.step" and report["steps"]["total"] >= 2
    assert report["now"][0] in CATEGORIES and isinstance(report["now"][2], list)
    if Path(f"/proc/self/task/{os.getpid()}/schedstat").exists():
        assert report["main_runq_s"] >= 0.0


def test_a_process_that_is_no_rank_reports_as_before(tmp_path: Path):
    sampler = stack_sampler.StackSampler(str(tmp_path))
    assert sampler.rank is None or "RANK" in os.environ
    sampler.sample()
    sampler.write()
    report: dict[str, Any] = json.loads(Path(sampler.path).read_text())
    assert ("rank" in report) == (sampler.rank is not None)


def test_mpi_and_slurm_launchers_of_python_ranks_get_the_hooks_not_the_profiler():
    from gputriage.trace.inject import is_python, launches_python

    assert launches_python(["mpirun", "-np", "4", "python", "train.py"])
    assert launches_python(["/usr/bin/srun", "--ntasks", "8", "python3", "-m", "train"])
    assert launches_python(["mpiexec", "-n", "2", "train.py"])
    assert not launches_python(["srun", "./a.out"]) and not launches_python(["python", "train.py"])
    assert not is_python(["mpirun", "-np", "4", "python", "train.py"])  # so never profiled (`--profile`: refused)
