"""The profiler's lifecycle under `gputriage run`: every second it holds the workload (starting, tracing, stopping,
exporting — with or without a trace to show for it) is the profiler's, never judged as the workload's; what it cost
each GPU is said; a trace whose idle the profiler caused does not override a busy GPU; the hook is re-armed in each
new regime (within a budget) and when a user asks (`gputriage profile RUN`, SIGUSR1)."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

import msgspec
import pytest
from rich.console import Console

from gputriage.diagnosis.run.judge import judge
from gputriage.diagnosis.run.merge import BUSY_OUTSIDE, merge
from gputriage.diagnosis.run.profile_gate import REARM_AFTER_S, REARM_PER_HOUR, ProfileGate
from gputriage.inworkload.profiler_hook import Profiler, window_path
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, Severity
from gputriage.model.run import GpuVerdict, ProfilerEffect, ProfileReport, RunMeta
from gputriage.model.trace import TraceVerdict
from gputriage.report.html import render_html
from gputriage.report.run_terminal import render
from gputriage.runner.gate_keeper import GateKeeper, workload_state
from gputriage.runner.profiled import read_profile
from gputriage.sampling.store import Store
from gputriage.trace import inject
from gputriage.trace.profile_files import profiled_windows, read_back
from recordings import recorded, runs
from waiting import stored_run, wait_for

GT = [sys.executable, "-m", "gputriage"]
KERNELS = '{"traceEvents": [\n  {"cat": "kernel", "name": "k"}]}'


class FakeProfile:
    """torch.profiler.profile as the hook uses it: start, stop, export (or a failing export)."""

    def __init__(self, events: str = KERNELS, export_fails: bool = False) -> None:
        self.events, self.export_fails = events, export_fails

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def export_chrome_trace(self, path: str) -> None:
        if self.export_fails:
            raise RuntimeError("CUPTI_ERROR_INVALID_DEVICE")
        Path(path).write_text(self.events)


class SteppingWorkload:
    """A stand-in training loop: the hook's optimizer-step hook called as a loop would call it."""

    def __init__(self, p: Profiler) -> None:
        self.p, self.stop = p, threading.Event()
        self.threads = [
            threading.Thread(target=self._steps, daemon=True),
            threading.Thread(target=p.worker, daemon=True),
        ]

    def _steps(self) -> None:
        while not self.stop.is_set():
            self.p.on_step()
            time.sleep(0.005)

    def __enter__(self) -> SteppingWorkload:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.p.finish()


def gated_hook(folder: Path) -> Profiler:
    p = Profiler(str(folder / "trace.json"), steps=2, window_s=0.0, max_s=5.0, cuda=True, gate=str(folder / "gate"))
    p.make = FakeProfile
    return p


# --- the hook: re-armed, one file per window, every hold written as it happens --------------------------------
def test_the_hook_is_re_armed_for_each_window_asked_and_writes_each_to_its_own_file(tmp_path):
    p = gated_hook(tmp_path)
    with SteppingWorkload(p):
        for k in (1, 2, 3):
            inject.open_gate(tmp_path, k)
            wait_for(lambda k=k: len(profiled_windows(tmp_path)) == k, f"window {k} profiled")
            if k == 1:  # once profiled, the hook waits for the next ask: no window is taken unasked
                time.sleep(0.5)
                assert len(profiled_windows(tmp_path)) == 1 and not (tmp_path / "trace.w2.json").exists()
    names = [Path(window_path(str(tmp_path / "trace.json"), k)).name for k in (1, 2, 3)]
    assert names == ["trace.json", "trace.w2.json", "trace.w3.json"]
    assert all((tmp_path / n).read_text() == KERNELS for n in names)
    written = read_back(tmp_path, keep=tmp_path / "kept.json")
    assert [w.index for w in written.windows] == [1, 2, 3]
    assert [h.end for h in written.holds] == ["exported"] * 3 and len(written.held_all_s) == 3
    # each window inside its hold, the holds one after another
    for w, (h0, h1) in zip(written.windows, written.held_all_s):
        assert w.window_s is not None and h0 <= w.window_s[0] <= w.window_s[1] <= h1
    assert all(a[1] <= b[0] for a, b in zip(written.held_all_s, written.held_all_s[1:]))
    assert [p.name for w in written.windows for p in w.kept] == ["kept.json", "kept.w2.json", "kept.w3.json"]
    assert written.traces == [tmp_path / "trace.w3.json"]  # the last window written


def test_a_hook_that_wrote_no_trace_still_says_when_it_held_the_workload(tmp_path):
    # the export fails (a CUPTI error at stop): no trace, but the seconds it held the workload are known
    now = [1000.0]
    p = Profiler(str(tmp_path / "trace.json"), clock=lambda: now[0])
    p.make = lambda: FakeProfile(export_fails=True)
    p.want = "start"
    p.act("signal")
    now[0] += 4.5  # CUPTI's start-up and the window
    p.want = "stop"
    p.act("signal")
    now[0] += 1.0
    written = read_back(tmp_path)
    assert written.traces == [] and "CUPTI_ERROR_INVALID_DEVICE" in (written.error or "")
    assert written.held_all_s == [[1000.0, 1004.5]] and written.holds[0].end == "released"
    # a workload that ended (or was killed) while the profiler was still starting: its hold runs to the run's end
    (tmp_path / "trace.json.holds").write_text("1 asked 2000.000\n1 began 2000.250\n")
    (tmp_path / "trace.json.log").unlink()
    written = read_back(tmp_path, ended_s=2006.0)
    assert written.held_all_s == [[2000.25, 2006.0]]
    assert "ended while the profiler held it (still starting" in (written.error or "")


# --- point 4: the profiler's start-up stall is never the workload's steady state ------------------------------
def _stalled_resnet(from_s: float, to_s: float) -> dict:
    """The batch-1 eager ResNet recorded on an H200 (GPU-Util 17%), its GPU at 0% from +from_s to +to_s as while
    CUPTI started up."""
    rec = runs("runs_unseen3.json.gz")["resnet_batch1_gpm"]
    t0 = rec["samples"][0]["t_s"]
    for s in rec["samples"]:
        if t0 + from_s <= s["t_s"] <= t0 + to_s:
            for g in s["gpus"]:
                g.update(
                    util_pct=0, sm_active_pct=0.0, tensor_active_pct=0.0, dram_active_pct=0.0, sm_occupancy_pct=0.0
                )
    rec["t0"] = t0
    return rec


def test_the_profilers_start_up_stall_in_the_steady_state_is_not_judged_as_the_workloads():
    rec = _stalled_resnet(8.0, 12.0)
    unaware = judge(recorded(rec), 0).verdict.per_gpu["0"]
    # as reported: the stall judged as the workload's steady state, input_starved at a low confidence
    assert unaware.bottleneck == B.input_starved and unaware.confidence < 0.5
    a, b = rec["t0"] + 8.0, rec["t0"] + 12.0
    profile = ProfileReport(
        mode="auto", asked=["the sampler cannot decide"], held_all_s=[[a, b]], error="no trace was written"
    )
    report = judge(recorded(rec), 0, profile=profile)
    v = report.verdict.per_gpu["0"]
    assert v.bottleneck == B.launch_bound and v.shares == {"launch_bound": 1.0}
    assert not any(r.regime == "input_starved" for r in v.timeline)
    cost = report.profile.effects["0"]
    assert cost.inside_pct == 0.0 and cost.outside_pct >= 15.0 and cost.held_s == 4.0 and cost.gpu == 0


def test_a_hook_whose_export_failed_leaves_its_hold_out_of_the_verdict_and_says_what_it_cost(tmp_path):
    rec = _stalled_resnet(8.0, 12.0)
    now = [rec["t0"] + 8.0]
    p = Profiler(str(tmp_path / "trace.json"), clock=lambda: now[0])
    p.make = lambda: FakeProfile(export_fails=True)
    p.want = "start"
    p.act("signal")
    now[0] += 4.0
    p.want = "stop"
    p.act("signal")
    profile = read_profile(tmp_path, None, "auto", ["the sampler cannot decide on GPU 0"])
    assert profile.error and profile.held_all_s and profile.trace is None
    report = judge(recorded(rec), 0, profile=profile)
    assert report.verdict.per_gpu["0"].bottleneck == B.launch_bound
    assert report.profile.effects["0"].inside_pct == 0.0
    console = Console(width=160, record=True, color_system=None)
    render(report, console)
    text = console.export_text()
    assert "GPU 0: the profiler held the workload 4.0 s and traced nothing: GPU-Util 0% meanwhile" in text
    assert "left out of the sampler's verdict" in text
    page = render_html(report)
    assert "cost on GPU 0" in page and "traced nothing" in page


def test_every_gpu_says_what_the_profiler_cost_it():
    # the recorded two-H200 DDP job, profiled 2 s in its steady state: a cost for each GPU, both ranks' GPUs held
    rec = runs("runs_typed_2gpu.json.gz")["ddp_allreduce"]
    run = recorded(rec)
    t = run.started_s + 6.0
    profile = ProfileReport(
        mode="on", asked=["steady state"], window_s=[t + 0.5, t + 2.5], held_s=[t, t + 3.0], held_all_s=[[t, t + 3.0]]
    )
    report = judge(run, 0, profile=profile)
    assert set(report.profile.effects) == {"0", "1"}
    assert all(e.held_s == 3.0 for e in report.profile.effects.values())


# --- point 5: a trace whose idle the profiler caused --------------------------------------------------------
def _v(b: str, undecided: tuple[str, ...] = ()) -> GpuVerdict:
    return GpuVerdict(gpu=0, bottleneck=B(b), undecided_between=[B(x) for x in undecided])


@pytest.mark.parametrize("host_side", ["launch_bound", "sync_bound", "host_bound", "input_starved"])
def test_a_host_side_trace_of_a_gpu_busy_outside_its_window_is_the_profilers_overhead(host_side):
    busy = ProfilerEffect(inside_pct=98.0, outside_pct=100.0)
    trace = TraceVerdict(bottleneck=B(host_side), confidence=1.0, gpu_idle_pct=47.0)
    for sampler in (_v("compute_bound"), _v("compute_bound", ("compute_bound", "tensor_cores_idle"))):  # GPM or not
        m = merge(sampler, trace, busy)
        assert m.bottleneck == B.compute_bound and m.source == "sampler" and m.profiler_starved
        assert "GPU-Util 100%" in m.why and "47% idle" in m.why and "overhead" in m.why
    # the sampler left that cause open (small kernels at 100% GPU-Util): the trace settles it
    assert merge(_v("underfilled", ("underfilled", host_side)), trace, busy).bottleneck == B(host_side)
    # a GPU not that busy outside the window: the trace's idle may be the workload's
    assert merge(_v("compute_bound"), trace, ProfilerEffect(80.0, BUSY_OUTSIDE.value - 5)).bottleneck == B(host_side)
    # a trace about the kernels is believed
    assert (
        merge(_v("compute_bound"), TraceVerdict(bottleneck=B.memory_bound, confidence=1.0), busy).bottleneck
        == B.memory_bound
    )


@pytest.mark.parametrize(
    "fixture, name",
    [
        ("runs_gallery_allocator.json.gz", "healthy"),  # GPM
        ("runs_unseen2.json.gz", "fp16_gradscaler_nogpm"),
    ],
)  # no GPM
def test_a_busy_training_loop_profiled_as_launch_bound_keeps_the_samplers_verdict(fixture, name):
    # recorded H200 loops at GPU-Util 97-100%, profiled; their traces as the BERT-large-like bf16 loop's read: 47%
    # idle, launch_bound at confidence 1.0
    rec = runs(fixture)[name]
    rec["profile"]["trace"]["verdict"].update(bottleneck="launch_bound", gpu_idle_pct=47.0, confidence=1.0)
    launch = msgspec.to_builtins(
        Finding(
            id="trace.launch_bound",
            severity=Severity.warn,
            step=2,
            symptom="GPU idle 47% between small kernels",
            cause="launch overhead",
            decision="CUDA graphs",
        )
    )
    rec["profile"]["trace"]["findings"] = [launch]
    profile = msgspec.convert(rec["profile"], ProfileReport)
    report = judge(recorded(rec), rec.get("exit_code"), profile=profile)
    # without GPM the sampler left tensor_cores_idle open: the trace's kernels (GEMMs on tensor cores) settle it
    undecided = report.verdict.per_gpu["0"].undecided_between
    assert report.verdict.bottleneck == B.compute_bound
    assert report.verdict.source == ("trace" if undecided else "sampler") and bool(undecided) == name.endswith("nogpm")
    assert "overhead" in report.verdict.merged.why and report.verdict.merged.trace == B.launch_bound
    finding = next(f for f in report.findings if f.id == "trace.launch_bound")
    assert finding.severity == Severity.info  # shown as the profiler's, not the workload's


# --- issue 30: re-armed in a new regime, within a budget ---------------------------------------------------
def _fed(mode: str, ws: list, on_ask: Callable[[ProfileGate, float], None] | None = None) -> ProfileGate:
    gate = ProfileGate(mode, {0: recorded(runs("runs_regime_shift.json.gz")["regime_shift"]).meta.gpus["0"]})
    for w in ws:
        gate.add(0, w)
        asked = gate.asked
        gate.first(w.t1_s)
        gate.late()
        gate.rearm(w.t1_s)
        if gate.asked != asked:  # profiled at once, 0.7 s
            gate.again((w.t1_s + 0.2, w.t1_s + 0.9), gate.asked)
            if on_ask:
                on_ask(gate, w.t1_s)
    return gate


def test_a_run_that_changes_regime_is_profiled_again_in_each_new_one():
    # `examples/workloads/regime_shift.py --seconds 180` on an H200: compute-bound, then a 150 ms host wait per step
    # (the step rate from 30 to 9 a second), then compute-bound again
    run = recorded(runs("runs_regime_shift.json.gz")["regime_shift"])
    ws = list(run.windows.series[0])
    at: list[float] = []
    gate = _fed("on", ws, lambda g, t: at.append(t - run.started_s))
    assert gate.kinds == ["steady", "regime", "regime"]
    assert at[0] < 30 and 70 < at[1] < 90 and 135 < at[2] < 160, at
    assert "step rate fell from 30 to 9" in gate.reasons[1]
    assert "host-side → compute_bound" in gate.reasons[2]
    # under auto the decided compute-bound regimes are the sampler's alone; the fall of the rate is profiled
    assert _fed("auto", ws).kinds == ["regime"]


def test_the_profilers_hold_is_no_new_regime():
    run = recorded(runs("runs_regime_shift.json.gz")["regime_shift"])
    ws = list(run.windows.series[0])[:60]  # the first, compute-bound regime
    gate = _fed("on", ws[:30])
    assert gate.kinds == ["steady"]
    t = ws[29].t1_s
    gate.held([(t, math.inf)])  # the profiler starts: GPU-Util 0% for 15 s, no step
    for w in ws[30:45]:
        gate.add(
            0,
            msgspec.structs.replace(
                w, util_pct=0.0, sm_active_pct=0.0, tensor_active_pct=0.0, steps_total=ws[29].steps_total
            ),
        )
        assert gate.rearm(w.t1_s) is None
    gate.held([(t, ws[44].t1_s)])
    for w in ws[45:60]:
        gate.add(0, w)
        assert gate.rearm(w.t1_s) is None
    assert gate.kinds == ["steady"] and not gate.notes


def test_re_arming_keeps_to_its_hourly_budget():
    run = recorded(runs("runs_regime_shift.json.gz")["regime_shift"])
    ws = list(run.windows.series[0])
    compute, host = ws[40], ws[100]  # one window of each regime, repeated
    assert REARM_AFTER_S.value < 20
    period = compute.t1_s - compute.t0_s
    seq, t = [], ws[0].t0_s
    for k in range(int(5400 / period)):  # an hour and a half, the regime changing every 30 s
        w = compute if (k * period // 30) % 2 == 0 else host
        seq.append(msgspec.structs.replace(w, t0_s=t, t1_s=t + period, steps_total=None))
        t += period
    asks: list[float] = []
    gate = _fed("on", seq, lambda g, at: asks.append(at))
    first_hour = [a for a in asks if a - asks[0] < 3600]
    assert len(first_hour) == REARM_PER_HOUR.value
    assert any("windows in the last hour already" in n for n in gate.notes)
    assert len(asks) > len(first_hour)  # the budget is per hour: later changes are profiled again
    assert all(sum(1 for b in asks if 0 <= b - a < 3600) <= REARM_PER_HOUR.value for a in asks)


# --- a window asked from another terminal: `gputriage profile RUN` and SIGUSR1 --------------------------------
def _fake_running_run(where: Path, gate: Path | None) -> tuple[Path, int]:
    """A store in `where` holding a run that runs (no end yet), its requests taken in `gate`."""
    where.mkdir(exist_ok=True)
    store_path = where / "runs.sqlite"
    db = Store(store_path)
    rid = db.begin_run(
        "run", ["python", "train.py"], RunMeta(profile_gate=str(gate) if gate else None, gputriage_pid=os.getpid())
    )
    db.close()
    return store_path, rid


def test_a_running_run_profiles_a_window_asked_from_another_terminal_and_by_signal(tmp_path):
    folder = tmp_path / "profile"
    folder.mkdir()
    store_path, rid = _fake_running_run(tmp_path / "store", folder)
    session = SimpleNamespace(meta=RunMeta(), gpus=[], windows=SimpleNamespace(series={}), run_id=rid)
    keeper = GateKeeper(session, folder, "auto", keep=tmp_path / "kept.json")  # type: ignore[arg-type]
    out = tmp_path / "asked.json"
    try:
        with SteppingWorkload(gated_hook(folder)):
            r = subprocess.run(
                GT + ["profile", str(rid), "--store", str(store_path), "--out", str(out), "--wait", "120"],
                capture_output=True,
                text=True,
                timeout=180,
            )
            assert r.returncode == 0, r.stderr
            assert f"trace written to {out}" in r.stdout and f"its trace goes to {out}" in r.stderr
            assert out.read_text() == KERNELS
            keeper.request()  # SIGUSR1 to `gputriage run`
            wait_for(lambda: (tmp_path / "kept.w2.json").exists(), "the signalled window kept")
    finally:
        keeper.stop()
    profile = read_profile(folder, None, "auto", keeper=keeper)
    assert [(w.index, w.kind) for w in profile.windows] == [(1, "asked"), (2, "asked")]
    assert profile.windows[0].trace_file == str(out) and profile.windows[1].trace_file.endswith("kept.w2.json")
    assert "gputriage profile" in profile.asked[0] and "SIGUSR1" in profile.asked[1]
    assert profile.trace is None  # asked by a user: listed, the run's verdict left to the sampler


def test_profile_says_plainly_when_the_run_cannot_be_asked(tmp_path):
    store_path, rid = _fake_running_run(tmp_path / "none", None)
    r = subprocess.run(GT + ["profile", str(rid), "--store", str(store_path)], capture_output=True, text=True)
    assert r.returncode == 3 and "runs without a profiler" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run(GT + ["profile", "999", "--store", str(store_path)], capture_output=True, text=True)
    assert r.returncode == 3 and "no run 999" in r.stderr
    store_path, rid = _fake_running_run(tmp_path / "gone", tmp_path / "gone" / "profile")
    r = subprocess.run(GT + ["profile", str(rid), "--store", str(store_path)], capture_output=True, text=True)
    assert r.returncode == 3 and "takes no request" in r.stderr
    # a run that takes the request but whose workload ends first: exit 1, said why
    folder = tmp_path / "p2"
    folder.mkdir()
    store_path, rid = _fake_running_run(tmp_path / "ended", folder)
    session = SimpleNamespace(meta=RunMeta(), gpus=[], windows=SimpleNamespace(series={}), run_id=rid)
    keeper = GateKeeper(session, folder, "auto")  # type: ignore[arg-type]
    proc = subprocess.Popen(
        GT + ["profile", str(rid), "--store", str(store_path), "--out", str(tmp_path / "o.json"), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(lambda: keeper.outs != {}, "the request taken")
    keeper.stop()  # the run ended: no hook ever profiled the window
    stdout, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1
    answer = json.loads(stdout)
    assert answer["state"] == "failed" and "ended before the window was profiled" in answer["error"]


LOOP = """
import os, time, torch
m = torch.nn.Linear(64, 64); opt = torch.optim.SGD(m.parameters(), lr=0.01)
t = time.time()
while time.time() - t < 150 and not os.path.exists("stop"):
    m(torch.randn(16, 64)).pow(2).mean().backward(); opt.step(); opt.zero_grad()
    time.sleep(0.01)  # light on the CPU: tests run beside it
print("loop done")
"""


def test_gputriage_run_takes_a_window_from_profile_and_from_sigusr1(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "loop.py").write_text(LOOP)
    store_path = tmp_path / "runs.sqlite"
    env = dict(os.environ, GPUTRIAGE_PROFILE_CUDA="0")
    run = subprocess.Popen(
        GT + ["run", "--store", str(store_path), "--json", "--", sys.executable, "loop.py"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def running() -> dict | None:
            row = stored_run(store_path)
            return row if row and row["meta"].get("profile_gate") else None

        wait_for(lambda: running() is not None, "the run's row in the store", 120)
        row = running()
        assert row is not None and row["ended"] is None and row["meta"]["gputriage_pid"] == run.pid
        gate = Path(row["meta"]["profile_gate"])  # asked once the workload imports torch (before: nothing to profile)
        wait_for(lambda: workload_state(gate) in ("importing", "ready"), "the workload importing torch", 120)
        r = subprocess.run(
            GT + ["profile", "1", "--store", str(store_path), "--out", str(tmp_path / "asked.json"), "--wait", "240"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 0, r.stderr
        assert (tmp_path / "asked.json").stat().st_size > 100
        os.kill(run.pid, signal.SIGUSR1)
        kept = tmp_path / "gputriage-profile-1-w2.json"
        wait_for(kept.exists, "the window asked by SIGUSR1", 240)
    finally:
        (tmp_path / "stop").write_text("")
        stdout, stderr = run.communicate(timeout=240)
    assert run.returncode == 0, stderr[-2000:]
    assert f"profile window 2, asked by SIGUSR1 to gputriage run: its trace will be written to {kept}" in stderr
    profile = json.loads(stdout)["profile"]
    assert [(w["index"], w["kind"]) for w in profile["windows"]] == [(1, "asked"), (2, "asked")]
    assert profile["windows"][1]["trace_file"] == str(kept)


# --- a signal that lands inside torch.compile's compiler does not start the profiler ------------------------------
def _frame_in(path: str):
    """A real frame whose caller runs code from `path` (a compiler's file, as torch's would be)."""
    code = compile("def compile_graph(f):\n    return f()\n", path, "exec")
    scope: dict = {}
    exec(code, scope)
    return scope["compile_graph"](lambda: sys._getframe())


def test_a_signal_inside_inductor_waits_and_one_in_the_workloads_code_starts(tmp_path):
    # live on an H200 (cold inductor cache, --no-gpm): the profiler started by signal while the main thread waited
    # on inductor's compile workers; its stop then failed ("Can't disable Kineto profiler when it's not running")
    # and the workload exited 1
    from gputriage.inworkload.profiler_hook import unsafe_to_start

    inside = _frame_in("/venv/lib/python3.12/site-packages/torch/_inductor/compile_fx.py")
    outside = _frame_in(str(tmp_path / "train.py"))
    assert unsafe_to_start(inside) and not unsafe_to_start(outside) and not unsafe_to_start()
    p = Profiler(str(tmp_path / "trace.json"), cuda=False)
    acted: list[str] = []
    p.act = acted.append  # type: ignore[method-assign]
    p.want = "start"
    p.on_signal(signal.SIGUSR2, inside)
    assert acted == []  # the worker signals again a little later
    p.on_signal(signal.SIGUSR2, outside)
    assert acted == ["signal"]
