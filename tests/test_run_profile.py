"""`run --profile` on the CPU: the injected profiler writes a trace the analysis reads, for a loop
with an optimizer (stopped after N steps), a module loop, and plain tensor code (signal path)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from gputriage.inworkload.profiler_hook import RANK_ALIGN_S

pytest.importorskip("torch")
GT = [sys.executable, "-m", "gputriage"]
# Each workload runs until its profiler has done what the test looks at (`hook.window`: the window asked for now;
# `hook.stops`: windows written), not for a set time: on a loaded machine its loop, and the profiler beside it, get
# less CPU; the test waits longer, and asserts the same.
WORKLOAD = """
import signal, sys, time
mode = sys.argv[1]
hook = signal.getsignal(signal.SIGUSR2).__self__  # the profiler `run --profile` armed in this interpreter
LIMIT_S = 150.0  # a workload whose profiler never gets there still ends
looping = False
if mode == "optim":  # the warm-up before the profiler asks is this loop's, not --profile-skip seconds that a loaded
    ready = hook.ready  # machine may spend building the optimizer (SGD imports torch._dynamo: seconds of imports)
    hook.ready = lambda: looping and ready()
import torch
if mode == "slow_start":  # as on a GPU, where CUPTI takes seconds to start
    import torch.profiler
    _start = torch.profiler.profile.start
    def _slow(self):
        time.sleep(1.5)
        _start(self)
    torch.profiler.profile.start = _slow
m = torch.nn.Linear(128, 128); opt = torch.optim.SGD(m.parameters(), lr=0.01)
a = torch.randn(128, 128)
t = time.time()
if mode == "late":  # compiling or loading: no framework op while the profiler's first window runs
    while hook.stops < 1 and time.time() - t < LIMIT_S:
        time.sleep(0.01)
def profiling():  # "short": until the profiler runs (the workload ends inside its window); else until it has
    return not hook.prof if mode == "short" else hook.window == 1 and not hook.done.is_set()  # written and judged it
while profiling() and time.time() - t < LIMIT_S:
    if mode == "optim":
        m(torch.randn(32, 128)).pow(2).mean().backward(); opt.step(); opt.zero_grad()
        looping = True
    else:
        a = torch.tanh(a @ a)
print("workload done")
"""


def profiled(tmp_path, mode: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`gputriage run --profile ARGS -- python w.py MODE`, CUDA left out of the profile."""
    script = tmp_path / "w.py"
    script.write_text(WORKLOAD)
    return subprocess.run(
        GT + ["run", "--profile", *args, "--", sys.executable, str(script), mode],
        capture_output=True,
        text=True,
        env=dict(os.environ, GPUTRIAGE_PROFILE_CUDA="0", **(env or {})),
        timeout=300,
    )


@pytest.mark.parametrize("mode", ["optim", "tensor"])
def test_profile_injection_writes_a_trace(tmp_path, mode):
    kept = tmp_path / "kept.json"
    r = profiled(
        tmp_path,
        mode,
        "--no-store",
        "--json",
        "--profile-skip",
        "0.3",
        "--profile-steps",
        "5",
        "--keep-trace",
        str(kept),
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "workload done" in r.stderr  # with --json the command's stdout goes to stderr
    report = json.loads(r.stdout)
    assert kept.exists() and kept.stat().st_size > 1000
    # a CPU-only trace has no GPU activity: the analysis says so instead of guessing
    assert "no GPU activity" in " ".join(report["profile"]["trace"]["ranks"][0]["problems"])
    ops = {e.get("name") for e in json.loads(kept.read_text())["traceEvents"] if e.get("cat") == "cpu_op"}
    assert ("aten::addmm" if mode == "optim" else "aten::mm") in ops
    log = report["profile"]["log"]
    if mode == "optim":  # not at the loop's first steps; at least 5 steps and half a second
        m = re.match(r"started at optimizer step (\d+) ", log[0])
        assert m and int(m.group(1)) >= 3, log
        m = re.match(r"stopped at optimizer step \d+ after (\d+) optimizer steps \(.*, ([0-9.]+) s profiled\)", log[1])
        assert m and int(m.group(1)) >= 5 and float(m.group(2)) >= 0.5, log
    else:
        assert log[0].startswith("started at signal") and log[1].startswith("stopped at signal")
    assert len(log) == 2
    t0, t1 = report["profile"]["window_s"]
    h0, h1 = report["profile"]["held_s"]
    assert h0 <= t0 < t1 <= h1 and t1 - t0 < 30


OWN_HANDLER = """
import signal, sys, time
hook = signal.getsignal(signal.SIGUSR2).__self__  # the profiler `run --profile` armed in this interpreter
signal.signal(signal.SIGUSR2, lambda *a: (print('requeued'), sys.exit(3)))
import torch
a, t = torch.randn(128, 128), time.time()
while not hook.signal_taken and time.time() - t < 150:  # until the profiler has seen whose handler it is
    a = torch.tanh(a @ a)
print('workload done')
"""


def test_a_workload_with_its_own_sigusr2_handler_never_gets_the_profilers_signal(tmp_path):
    # a scheduler's requeue helper (submitit-style) that checkpoints and exits on SIGUSR2: plain tensor code, where
    # only the signal could start the profiler; it must not reach the workload's handler
    script = tmp_path / "w.py"
    script.write_text(OWN_HANDLER)
    env = dict(os.environ, GPUTRIAGE_PROFILE_CUDA="0")
    r = subprocess.run(
        GT + ["run", "--no-store", "--json", "--profile", "--profile-skip", "0.3", "--", sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0 and "workload done" in r.stderr and "requeued" not in r.stderr, r.stderr[-2000:]
    log = json.loads(r.stdout)["profile"]["log"]
    assert any("handles SIGUSR2 itself" in line for line in log), log


def test_profile_kept_when_the_workload_ends_inside_the_window(tmp_path):
    r = profiled(
        tmp_path, "short", "--no-store", "--json", "--profile-skip", "0.2", env={"GPUTRIAGE_PROFILE_WINDOW_S": "30"}
    )
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(r.stdout)
    log = report["profile"]["log"]
    assert len(log) == 2 and log[0].startswith("started at signal") and log[1].startswith("stopped at exit after 0")
    assert "no GPU activity" in " ".join(report["profile"]["trace"]["ranks"][0]["problems"])


def test_a_window_without_work_is_profiled_again(tmp_path):
    kept = tmp_path / "kept.json"
    r = profiled(
        tmp_path,
        "late",
        "--no-store",
        "--json",
        "--profile-skip",
        "0.2",
        "--keep-trace",
        str(kept),
        env={"GPUTRIAGE_PROFILE_WINDOW_S": "0.3"},
    )
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(r.stdout)
    log = report["profile"]["log"]
    assert any(line.startswith("no framework op in the window") for line in log), log
    assert log[-1].startswith("stopped at"), log
    # the trace kept is the window that saw the workload compute, and its times are that window's
    ops = [e for e in json.loads(kept.read_text())["traceEvents"] if e.get("cat") == "cpu_op"]
    assert any(e["name"] == "aten::mm" for e in ops)
    t0, t1 = report["profile"]["window_s"]
    assert t1 - t0 < 5


def test_profile_needs_a_python_command(tmp_path):
    r = subprocess.run(GT + ["run", "--no-store", "--profile", "--", "true"], capture_output=True, text=True)
    assert r.returncode == 2 and "Python command" in r.stderr


def test_the_window_counts_from_when_the_profiler_runs(tmp_path):
    # a slow start must neither shorten the window nor let a stop run inside the start
    r = profiled(tmp_path, "slow_start", "--no-store", "--json", "--profile-skip", "0.2")
    assert r.returncode == 0, r.stderr[-2000:]
    log = json.loads(r.stdout)["profile"]["log"]
    assert len(log) == 2 and log[0].startswith("started at signal") and log[1].startswith("stopped at signal"), log
    assert float(log[0].split(", ")[1].split(" s to start")[0]) >= 1.5
    assert float(log[1].split(", ")[1].split(" s profiled")[0]) >= 0.45


def test_the_terminal_report_says_what_the_profiler_cost(tmp_path):
    r = profiled(tmp_path, "tensor", "--no-store", "--profile-skip", "0.2", env={"GPUTRIAGE_PROFILE_WINDOW_S": "0.3"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert re.search(r"profiled \d+\.\d\d s from \+\d+\.\d s", r.stderr), r.stderr[-800:]
    assert "left out of the sampler's verdict" in r.stderr


def test_show_keeps_the_merged_verdict_of_a_profiled_run(tmp_path):
    store = tmp_path / "s.sqlite"
    r = profiled(tmp_path, "tensor", "--store", str(store), "--quiet", "--profile-skip", "0.2")
    assert r.returncode == 0, r.stderr[-2000:]
    run_id = json.loads(
        subprocess.run(GT + ["runs", "--json", "--store", str(store)], capture_output=True, text=True).stdout
    )["runs"][0]["id"]
    shown = json.loads(
        subprocess.run(
            GT + ["show", str(run_id), "--json", "--store", str(store)], capture_output=True, text=True
        ).stdout
    )
    assert {"per_gpu", "merged", "source", "bottleneck"} <= set(shown["verdict"])


# --- the hook itself, as a module ------------------------------------------------------------------
class FakeProfile:
    def __init__(self, events: str) -> None:
        self.events, self.running = events, False

    def start(self) -> None:
        self.running = True

    def stop(self) -> None:
        self.running = False

    def export_chrome_trace(self, path: str) -> None:
        with open(path, "w") as fh:
            fh.write(self.events)


def test_the_hook_starts_after_the_warm_up_steps_and_stops_after_its_window(tmp_path):
    from gputriage.inworkload.profiler_hook import WARM_STEPS, Profiler

    out = str(tmp_path / "trace.json")
    now = [100.0]
    p = Profiler(out, steps=3, window_s=0.5, cuda=True, clock=lambda: now[0])
    p.make = lambda: FakeProfile('{"traceEvents": [\n  {"cat": "kernel"}]}')
    p.want = "start"
    for step in range(1, WARM_STEPS):
        p.on_step()
        assert p.prof is None, f"started at step {step}, inside the loop's warm-up"
    p.on_step()
    assert p.prof and p.prof.running
    for _ in range(3):  # three profiled steps, but under the half second: not yet
        now[0] += 0.1
        p.on_step()
    assert p.want is None
    now[0] += 0.5
    p.on_step()  # enough steps, and the window is long enough: this step stops it
    assert p.prof is False and p.stops == 1 and p.want is None
    log = open(out + ".log").read().splitlines()
    assert log[0].startswith(f"started at optimizer step {WARM_STEPS}")
    assert log[1].startswith("stopped at optimizer step") and log[2].startswith("window ")
    assert p.saw_work()


def test_the_hook_sees_a_window_without_gpu_work_and_arms_only_from_its_variables(tmp_path):
    from gputriage.inworkload import profiler_hook

    empty = tmp_path / "t.json"
    empty.write_text('{"traceEvents": [\n  {"cat": "cpu_op", "name": "aten::mm"}]}')
    assert not profiler_hook.Profiler(str(empty), cuda=True).saw_work()
    assert profiler_hook.Profiler(str(empty), cuda=False).saw_work()
    assert profiler_hook.from_environ({}) is None
    env = {
        "GPUTRIAGE_TRACE_OUT": str(tmp_path / "x.json"),
        "GPUTRIAGE_PROFILE_STEPS": "7",
        "GPUTRIAGE_PROFILE_CUDA": "0",
    }
    p = profiler_hook.from_environ(env)
    assert p is not None and p.steps == 7 and not p.cuda
    assert env == {}  # popped: the workload's child processes are not profiled


def test_the_armed_hooks_break_no_graph_compiled_meanwhile(tmp_path):
    """A workload that compiles while the profiler's hooks are armed (a new shape, a late compile) gets the
    graphs it would get without them: the hooks are no-ops while torch.compile traces them."""
    import torch
    from torch._dynamo.utils import counters

    from gputriage.inworkload.profiler_hook import Profiler

    torch._dynamo.reset()
    counters.clear()
    p = Profiler(str(tmp_path / "t.json"), cuda=False)
    assert p.setup()
    try:
        model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16))
        compiled = torch.compile(model, backend="aot_eager", dynamic=False)
        with pytest.warns(UserWarning, match="global hooks"):
            for rows in (2, 3, 4):  # three shapes, three graphs
                compiled(torch.randn(rows, 16))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        opt.step()
    finally:
        p.finish()
    assert not counters["graph_break"], list(counters["graph_break"])
    assert counters["stats"]["unique_graphs"] == 3
    assert p.first_forward and p.steps_seen == 1  # the hooks still fire where the workload runs eagerly
    torch._dynamo.reset()


def test_a_failing_start_is_logged_and_ends_the_profiling(tmp_path):
    from gputriage.inworkload.profiler_hook import Profiler

    def broken():
        raise RuntimeError("CUPTI_ERROR_NOT_INITIALIZED")

    p = Profiler(str(tmp_path / "t.json"))
    p.make, p.want = broken, "start"
    p.act("signal")
    assert p.prof is False and p.done.is_set()
    assert "ERROR start: RuntimeError: CUPTI_ERROR_NOT_INITIALIZED" in (tmp_path / "t.json.log").read_text()


def test_a_launcher_leaves_the_profiler_to_its_ranks(tmp_path):
    from gputriage.inworkload import profiler_hook

    assert profiler_hook.is_launcher(["/usr/bin/python3", "/venv/bin/torchrun", "--nproc_per_node=2", "t.py"])
    assert profiler_hook.is_launcher(["python", "-m", "torch.distributed.run", "t.py"])
    assert not profiler_hook.is_launcher(["python", "-u", "train.py", "--local-rank=0"])
    env = {"GPUTRIAGE_TRACE_OUT": str(tmp_path / "trace.json"), "GPUTRIAGE_PROFILE_CUDA": "0"}
    assert profiler_hook.from_environ(env, ["python3", "/venv/bin/torchrun", "t.py"]) is None
    assert "GPUTRIAGE_TRACE_OUT" in env  # left for the ranks it starts
    p = profiler_hook.from_environ(dict(env, RANK="1"), ["python3", "t.py"])
    assert p is not None and p.out == str(tmp_path / "trace.rank1.json")


DISTRIBUTED = """
import signal, time, torch, torch.distributed as dist
hook = signal.getsignal(signal.SIGUSR2).__self__  # this rank's profiler
dist.init_process_group("gloo")
m = torch.nn.Linear(128, 128); opt = torch.optim.SGD(m.parameters(), lr=0.01)
t = time.time()
while True:
    m(torch.randn(32, 128)).pow(2).mean().backward()
    for p in m.parameters():
        dist.all_reduce(p.grad)
    opt.step(); opt.zero_grad()
    time.sleep(0.005)  # light on the CPU: tests run beside it
    done = torch.tensor([float(hook.window > 1 or hook.done.is_set() or time.time() - t > 150)])  # its trace is in
    dist.all_reduce(done, op=dist.ReduceOp.MIN)  # the ranks stop at the same step, once every rank's is
    if done.item():
        break
dist.destroy_process_group()
print("rank done")
"""


def test_profile_of_a_torchrun_job_profiles_every_rank(tmp_path):
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    if not os.path.exists(torchrun):
        pytest.skip("no torchrun beside this Python")
    script = tmp_path / "ddp.py"
    script.write_text(DISTRIBUTED)
    kept = tmp_path / "kept.json"
    env = dict(os.environ, GPUTRIAGE_PROFILE_CUDA="0", OMP_NUM_THREADS="1")
    r = subprocess.run(
        GT
        + [
            "run",
            "--no-store",
            "--json",
            "--profile",
            "--profile-skip",
            "0.3",
            "--profile-steps",
            "5",
            "--keep-trace",
            str(kept),
            "--",
            torchrun,
            "--nproc_per_node=2",
            "--master_port=29517",
            str(script),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(r.stdout)
    ranks = report["profile"]["trace"]["ranks"]
    assert sorted(x["rank"] for x in ranks) == [0, 1]
    assert (tmp_path / "kept.rank0.json").exists() and (tmp_path / "kept.rank1.json").exists()
    # the ranks started at an optimizer step, not by signal while the job set up, asked at the same instant: each
    # counts its steps from its own hooks, and on a busy machine one rank takes the next step a little later
    starts = {line.split(":")[0]: line for line in report["profile"]["log"] if "started at" in line}
    assert len(starts) == 2 and all(re.match(r"rank \d: started at optimizer step \d+ ", x) for x in starts.values())
    at_s = [float(re.search(r"\(\+([\d.]+) s,", x).group(1)) for x in starts.values()]
    assert max(at_s) - min(at_s) < RANK_ALIGN_S, report["profile"]["log"]
