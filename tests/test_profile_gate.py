"""When `run --profile` asks the profiler inside the workload for a window: at the steady state the
sampler sees, under `auto` only where the sampler cannot decide, again when the window was unlike the run."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import msgspec
import pytest

from gputriage.diagnosis.run.profile_gate import MAX_WINDOWS, STEADY_WINDOWS, ProfileGate
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.run import GpuStatic, RunMeta
from gputriage.model.sample import Sample
from gputriage.sampling.session import replay

TYPED = json.loads(gzip.decompress((Path(__file__).parent / "fixtures" / "h200" / "runs_typed.json.gz").read_bytes()))
GT = [sys.executable, "-m", "gputriage"]


def recording(name: str, gpm: bool = True):
    """A recorded H200 run replayed (as a GPU without GPM sees it, if asked)."""
    rec = TYPED[name]
    samples = [msgspec.convert(s, Sample) for s in rec["samples"]]
    if not gpm:
        for s in samples:
            s.gpus = [
                msgspec.structs.replace(
                    g, sm_active_pct=None, sm_occupancy_pct=None, tensor_active_pct=None, dram_active_pct=None
                )
                for g in s.gpus
            ]
    meta = msgspec.convert(rec["meta"], RunMeta)
    meta.gpus["0"].gpm = gpm
    return replay(samples, meta)


def windows(name: str, gpm: bool = True):
    """A recorded H200 run's windows on GPU 0, and its GPU's static facts."""
    rec = recording(name, gpm)
    return list(rec.windows.series[0]), rec.meta.gpus["0"]


def feed(mode: str, name: str, gpm: bool = True) -> tuple[ProfileGate, float | None, list]:
    """Feed the windows one by one as they close; when the gate asked (the window's end), or None."""
    ws, static = windows(name, gpm)
    gate = ProfileGate(mode, {0: static})
    for w in ws:
        gate.add(0, w)
        if gate.first(w.t1_s) is not None:
            return gate, w.t1_s, ws
    return gate, None, ws


@pytest.mark.parametrize("name", ["healthy", "launch_bound", "input_starved", "small_batch", "host_stats"])
def test_on_asks_once_the_gpu_has_computed_in_one_regime_for_three_windows(name):
    gate, asked, ws = feed("on", name)
    assert asked is not None and gate.asked == 1 and "steady state" in gate.reasons[0]
    first = next(w.t0_s for w in ws if (w.util_pct or 0) >= 5 or (w.sm_active_pct or 0) >= 5)
    assert asked >= first + STEADY_WINDOWS.value - 0.5  # not during start-up, not at the first busy window
    assert gate.first(asked + 100) is None  # once


@pytest.mark.parametrize("name", ["healthy", "unfused_elementwise", "small_batch", "pageable_copy", "contended"])
def test_auto_leaves_the_profiler_off_where_the_sampler_decides(name):
    gate, asked, _ = feed("auto", name)
    assert asked is None and gate.asked == 0


@pytest.mark.parametrize("name", ["item_sync", "launch_bound", "host_stats"])
def test_auto_profiles_where_a_host_side_cause_stays_undecided(name):
    gate, asked, _ = feed("auto", name)
    assert asked is not None and "cannot decide" in gate.reasons[0]


def test_auto_profiles_a_gpu_without_gpm_where_tensor_cores_cannot_be_told_from_cuda_cores():
    gate, asked, _ = feed("auto", "healthy", gpm=True)
    assert asked is None
    gate, asked, _ = feed("auto", "fp32_no_tensor_cores", gpm=False)
    assert asked is not None and "tensor_cores_idle" in gate.reasons[0]


def test_a_profiled_window_unlike_the_run_is_profiled_again_once_more_at_most():
    gate, asked, ws = feed("on", "healthy")
    steady = [w for w in ws if w.t0_s >= asked]
    for w in steady:
        gate.add(0, w)
    mid = steady[len(steady) // 2]
    assert gate.again((mid.t0_s, mid.t1_s)) is None  # at 100% like the rest: kept
    # a window at GPU-Util 0% (the profiler started in the warm-up, as in a recorded GPT loop)
    idle = msgspec.structs.replace(
        steady[-1], t0_s=steady[-1].t1_s + 1, t1_s=steady[-1].t1_s + 2, util_pct=0.0, sm_active_pct=0.0
    )
    gate.add(0, idle)
    reason = gate.again((idle.t0_s, idle.t1_s))
    assert reason is not None and "GPU-Util 0% against 100%" in reason and gate.asked == 2
    assert MAX_WINDOWS.value == 2 and gate.again((idle.t0_s, idle.t1_s)) is None


def test_no_gpu_sampled_on_profiles_at_once_and_auto_never():
    assert ProfileGate("on", {}).first(0.0) is not None
    assert ProfileGate("auto", {}).first(0.0) is None
    gate = ProfileGate("on", {0: GpuStatic()})
    assert gate.first(0.0) is None  # the GPU has not computed yet


def test_a_gated_hook_waits_for_gputriage_to_ask(tmp_path):
    from gputriage.inworkload.profiler_hook import Profiler
    from gputriage.trace import inject

    p = Profiler(str(tmp_path / "trace.json"), gate=str(tmp_path / "gate"))
    passed = threading.Event()

    def wait() -> None:
        p.wait_gate(1)
        passed.set()

    threading.Thread(target=wait, daemon=True).start()
    time.sleep(0.3)
    assert not passed.is_set()
    inject.open_gate(tmp_path, 1)
    assert passed.wait(2)
    p.wait_gate(1)  # asked once: the first window goes; a second needs a second ask
    again = threading.Thread(target=p.wait_gate, args=(2,), daemon=True)
    again.start()
    again.join(0.3)
    assert again.is_alive()
    inject.open_gate(tmp_path, 2)
    again.join(2)
    assert not again.is_alive()


def test_auto_is_the_default_and_without_a_gpu_runs_unprofiled_and_says_why_not(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "w.py"
    script.write_text(
        "import torch, time\nt = time.time()\nwhile time.time() - t < 2: torch.randn(64, 64) @ "
        "torch.randn(64, 64)\nprint('done')\n"
    )
    env = dict(os.environ, GPUTRIAGE_PROFILE_CUDA="0")
    r = subprocess.run(
        GT + ["run", "--no-store", "--json", "--profile", "auto", "--", sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(r.stdout)
    assert report["profile"]["mode"] == "auto" and not report["profile"].get("asked")
    assert "error" not in report["profile"] and "trace" not in report["profile"]
    r = subprocess.run(
        GT + ["run", "--no-store", "--json", "--", sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert json.loads(r.stdout)["profile"]["mode"] == "auto"  # the default for a Python command, GPM or not
    r = subprocess.run(
        GT + ["run", "--no-store", "--json", "--", "sleep", "0.1"], capture_output=True, text=True, timeout=60
    )
    assert json.loads(r.stdout)["profile"] is None  # not Python: nothing to inject
    r = subprocess.run(
        GT + ["run", "--no-store", "--profile", "--no-profile", "--", sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert r.returncode == 2 and "contradict" in r.stderr


def test_a_script_run_by_path_keeps_the_interpreter_its_shebang_names(tmp_path):
    # `gputriage run -- ./train.py` with auto the default: the script runs as the user gave it (its shebang's
    # interpreter, e.g. the project's venv), not under gputriage's own Python
    interpreter = tmp_path / "project-python"
    interpreter.symlink_to(sys.executable)
    script = tmp_path / "train.py"
    script.write_text(f"#!{interpreter}\nimport sys\nprint('interpreter', sys.executable)\n")
    script.chmod(0o755)
    r = subprocess.run(
        GT + ["run", "--no-store", "--json", "--", str(script)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"interpreter {interpreter}" in r.stderr  # the command's output goes to stderr under --json
    assert json.loads(r.stdout)["profile"]["mode"] == "auto"  # and the injected hook still rides along


def _judged(name: str, gpm: bool):
    from gputriage.diagnosis.run.judge import judge

    return judge(recording(name, gpm), 0)


def test_the_report_says_which_verdicts_a_gpu_without_gpm_cannot_see():
    # an H200 with GPM: nothing out of sight but vram_pressure, from VRAM use alone (recorded before the workload
    # reported its allocator); the same loop recorded with it: nothing at all
    assert [(b.bottleneck.value, b.why.split(":")[0]) for b in _judged("healthy", gpm=True).blind_spots] == [
        ("vram_pressure", "approximate")
    ]
    from gputriage.diagnosis.run.judge import judge

    counted = json.loads(
        gzip.decompress((Path(__file__).parent / "fixtures" / "h200" / "runs_allocator.json.gz").read_bytes())
    )["healthy_gpm"]
    assert (
        judge(
            replay([msgspec.convert(s, Sample) for s in counted["samples"]], msgspec.convert(counted["meta"], RunMeta)),
            0,
        ).blind_spots
        == []
    )
    report = _judged("fp32_no_tensor_cores", gpm=False)
    spots = {b.bottleneck.value: b for b in report.blind_spots}
    assert "no GPM" in spots["tensor_cores_idle"].why and spots["tensor_cores_idle"].gpus == [0]
    assert spots["underfilled"].why.startswith("approximate") and spots["memory_bound"].why.startswith("approximate")
    assert "comm_bound" not in spots  # one GPU: no collectives to miss
    assert "--profile auto" in spots["tensor_cores_idle"].how


def test_a_ddp_job_without_a_trace_cannot_see_its_exposed_communication():
    from gputriage.diagnosis.run.judge import judge

    ddp = json.loads(
        gzip.decompress((Path(__file__).parent / "fixtures" / "h200" / "runs_typed_2gpu.json.gz").read_bytes())
    )["ddp_allreduce"]
    meta = msgspec.convert(ddp["meta"], RunMeta)
    samples = [msgspec.convert(s, Sample) for s in ddp["samples"]]
    report = judge(replay(samples, meta), 0)  # recorded before NVLink was sampled: no link counted
    assert [
        (b.bottleneck.value, b.why.split(":")[0]) for b in report.blind_spots if b.bottleneck != B.vram_pressure
    ] == [("comm_bound", "these GPUs have no NVLink counters")]
    for g in meta.gpus.values():  # GPUs whose NVLinks are counted see collectives, not whether they overlap
        g.nvlink_links, g.nvlink_link_mb_per_s = 18, 26_562.0
    report = judge(replay(samples, meta), 0)
    assert [
        (b.bottleneck.value, b.why.split(":")[0]) for b in report.blind_spots if b.bottleneck != B.vram_pressure
    ] == [("comm_bound", "approximate")]


@pytest.mark.parametrize("name, asks", [("ddp_allreduce", True), ("ddp_allreduce_fixed", False)])
def test_auto_profiles_a_ddp_job_whose_links_are_not_counted_while_its_tensor_cores_rest(name, asks):
    rec = json.loads(
        gzip.decompress((Path(__file__).parent / "fixtures" / "h200" / "runs_typed_2gpu.json.gz").read_bytes())
    )[name]
    meta = msgspec.convert(rec["meta"], RunMeta)
    run = replay([msgspec.convert(s, Sample) for s in rec["samples"]], meta)
    gate = ProfileGate("auto", {int(k): g for k, g in meta.gpus.items()})
    reason = None
    for w0, w1 in zip(run.windows.series[0], run.windows.series[1]):  # both ranks' windows as they close
        gate.add(0, w0)
        gate.add(1, w1)
        reason = reason or gate.first(w1.t1_s)
    if asks:  # the all-reduce dominates: SMs half busy, tensor pipes at 2%, links out of sight
        assert reason is not None and "compute_bound or comm_bound" in reason
    else:  # 16 micro-batches per all-reduce: the tensor cores lead, the sampler decides
        assert reason is None and gate.asked == 0


@pytest.mark.parametrize("name", ["ddp_allreduce", "ddp_allreduce_fixed"])
def test_without_gpm_a_ddp_job_is_profiled_under_auto_with_its_collectives_among_the_causes(name):
    # the two-H200 recordings as a GPU without GPM sees them (the --no-gpm cell of the gallery, replayed)
    rec = json.loads(
        gzip.decompress((Path(__file__).parent / "fixtures" / "h200" / "runs_typed_2gpu.json.gz").read_bytes())
    )[name]
    samples = [msgspec.convert(s, Sample) for s in rec["samples"]]
    for s in samples:
        s.gpus = [
            msgspec.structs.replace(
                g, sm_active_pct=None, sm_occupancy_pct=None, tensor_active_pct=None, dram_active_pct=None
            )
            for g in s.gpus
        ]
    meta = msgspec.convert(rec["meta"], RunMeta)
    for g in meta.gpus.values():
        g.gpm = False
    run = replay(samples, meta)
    gate = ProfileGate("auto", {int(k): g for k, g in meta.gpus.items()})
    reason = None
    for w0, w1 in zip(run.windows.series[0], run.windows.series[1]):
        gate.add(0, w0)
        gate.add(1, w1)
        reason = reason or gate.first(w1.t1_s)
    assert reason is not None and "comm_bound" in reason and "tensor_cores_idle" in reason


def test_the_profilers_own_start_is_no_steady_state_to_compare_a_window_with():
    # fp32 GEMMs at 100% on the H200; the profiler's start then held the workload 6 s at 0%, long enough for
    # a "steady state" of its own: the window (at 90%) is compared with the run the gate asked in, not with that
    gate, asked, ws = feed("on", "fp32_no_tensor_cores")
    last = ws[-1]
    t = last.t1_s
    held = [
        msgspec.structs.replace(last, t0_s=t + k, t1_s=t + k + 1, util_pct=0.0, sm_active_pct=0.0) for k in range(6)
    ]
    profiled = msgspec.structs.replace(last, t0_s=t + 6, t1_s=t + 7, util_pct=90.0)
    for w in held + [profiled]:
        gate.add(0, w)
    assert gate.again((t + 6.0, t + 6.9)) is None
    # a window in which the GPU idled is profiled again
    gate.add(0, msgspec.structs.replace(last, t0_s=t + 7, t1_s=t + 8, util_pct=5.0, sm_active_pct=1.0))
    assert gate.again((t + 7.0, t + 7.9)) is not None


NO_GPM = json.loads(gzip.decompress((Path(__file__).parent / "fixtures" / "h200" / "runs_no_gpm.json.gz").read_bytes()))


def test_auto_profiles_a_run_whose_windows_name_different_host_side_causes():
    # host_stats under `run --no-gpm` on the H200: NVML's PCIe counter (all a GPU before Hopper has) catches its
    # bursts of copies back to the host in some seconds only (0.6 MiB/s median against 213 through GPM), so its
    # windows flip between sync_bound and host_bound; that is a host-side steady state the sampler cannot decide
    rec = NO_GPM["host_stats"]
    meta = msgspec.convert(rec["meta"], RunMeta)
    ws = list(replay([msgspec.convert(s, Sample) for s in rec["samples"]], meta).windows.series[0])
    gate = ProfileGate("auto", {0: meta.gpus["0"]})
    asked = None
    for w in ws:
        gate.add(0, w)
        if gate.first(w.t1_s) is not None:
            asked = w.t1_s
            break
    assert asked is not None and "host_bound" in gate.reasons[0] and "sync_bound" in gate.reasons[0]


@pytest.mark.parametrize(
    "name, sampler, merged",
    [
        ("job_shares_gpu", "contended", "contended"),
        ("host_stats_rerun", "host_bound", "host_bound"),
        # compute_bound with tensor cores out of sight: profiled, and the trace's elementwise kernels decide
        ("gpt_loop", "compute_bound", "memory_bound"),
    ],
)
def test_runs_on_an_h200_without_gpm_replay_to_their_verdicts(name, sampler, merged):
    # `benchmarks/diagnose.py --no-gpm` on an H200 (2026-12-01, after the profile gate's fix): each run with
    # the profiler windows `--profile auto` asked for
    from gputriage.diagnosis.run.judge import judge
    from gputriage.model.run import ProfileReport

    rec = NO_GPM[name]
    samples = [msgspec.convert(s, Sample) for s in rec["samples"]]
    meta = msgspec.convert(rec["meta"], RunMeta)
    assert all(g.gpm is False for g in meta.gpus.values()) and not any(g.sm_active_pct for s in samples for g in s.gpus)
    profile = msgspec.convert(rec["profile"], ProfileReport)
    report = judge(replay(samples, meta, command=rec["command"]), rec["exit_code"], profile=profile)
    gpu = report.verdict.per_gpu["0"]
    assert (gpu.bottleneck.value, report.verdict.bottleneck.value) == (sampler, merged)


def test_warm_up_steps_before_the_first_reported_step_are_start_up():
    # gpt_loop reports its steps (gputriage.step); its 3 warm-up steps ran 6 s with the GPU at 0% (DataLoader
    # workers starting, kernels loading) after a first burst of GPU work: start-up, not a sync-bound regime
    from gputriage.diagnosis.run.judge import judge
    from gputriage.model.run import ProfileReport

    rec = NO_GPM["gpt_loop"]
    samples = [msgspec.convert(s, Sample) for s in rec["samples"]]
    report = judge(
        replay(samples, msgspec.convert(rec["meta"], RunMeta), command=rec["command"]),
        0,
        profile=msgspec.convert(rec["profile"], ProfileReport),
    )  # the profiler's holds left out
    timeline = report.verdict.per_gpu["0"].timeline
    first_step = next(s.t_s for s in samples if s.workload and (s.workload.steps_total or 0) > 0) - samples[0].t_s
    assert timeline[0].regime == "start-up" and timeline[0].end_s >= first_step - 1.0
    assert "sync_bound" not in {r.regime for r in timeline}


def test_auto_does_not_profile_a_steady_loop_for_the_one_window_that_caught_it_starting():
    # the gallery's healthy GEMM loop (2026-12-02): its first steady window read GPU-Util 100% but SM activity 73%
    # (the work began part-way through the second), which left underfilled open; auto profiled it, and the
    # profiler held the loop 8 s (373 TFLOP/s measured against 664 unprofiled on the same day)
    fixtures = Path(__file__).parent / "fixtures" / "h200"
    healthy = json.loads(gzip.decompress((fixtures / "runs_gallery_allocator.json.gz").read_bytes()))["healthy"]
    gaps = json.loads(gzip.decompress((fixtures / "runs_unseen4.json.gz").read_bytes()))[
        "empty_cache_loop_unprofiled_gpm"
    ]  # SM activity 0.74 of GPU-Util in every window
    asked = {}
    for name, rec in (("healthy", healthy), ("gaps", gaps)):
        meta = msgspec.convert(rec["meta"], RunMeta)
        run = replay([msgspec.convert(s, Sample) for s in rec["samples"]], meta)
        gate = ProfileGate("auto", {0: meta.gpus["0"]})
        held = (rec["profile"] or {}).get("held_s") or [0.0, 0.0]
        reason = None
        for w in run.windows.series[0]:
            if w.t1_s >= held[0] and w.t0_s <= held[1]:
                continue  # the profiler held the loop there (it would not have run)
            gate.add(0, w)
            reason = reason or gate.first(w.t1_s)
        asked[name] = reason
    assert healthy["profile"]["asked"] and asked["healthy"] is None  # asked on the H200; not any more
    assert asked["gaps"] is not None and "underfilled" in asked["gaps"]
