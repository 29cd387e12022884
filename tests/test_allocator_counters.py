"""The caching allocator's counters a Python workload reports under `run`
(`gputriage.inworkload.allocator_counters`), what the sampler makes of them (cudaFree and retries per second,
out-of-memory errors), and vram_pressure judged from them rather than from how full the GPU is."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from gputriage.diagnosis.run.classify import ALLOC_CHURN, label
from gputriage.diagnosis.run.rules import out_of_memory as out_of_memory_rule
from gputriage.inworkload import allocator_counters, progress
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, Severity
from gputriage.model.recording import Recording
from gputriage.model.run import GpuStatic, RunMeta
from gputriage.model.sample import GpuSample, Sample, WorkloadSample
from gputriage.model.window import WindowMetrics
from gputriage.sampling.progress import ProgressReader
from gputriage.sampling.windows import Windower
from gputriage.testing.accuracy import load_manifest
from gputriage.testing.recordings import evidence
from gputriage.trace import inject
from recordings import judged

# a torch that has initialized CUDA, as the workload's allocator thread finds it in sys.modules: each step gives
# 40 blocks back to the driver and takes 40 again (empty_cache() in the loop); then an allocation of 1 GiB fails
WORKLOAD = textwrap.dedent("""
    import importlib.machinery, sys, time, types
    stats = {"num_alloc_retries": 0, "num_device_alloc": 0, "num_device_free": 0, "num_ooms": 0,
             "reserved_bytes": {"all": {"current": 3 << 30}}, "allocated_bytes": {"all": {"current": 2 << 30}}}
    observers = []
    torch = types.ModuleType("torch")
    torch.__spec__ = importlib.machinery.ModuleSpec("torch", None)
    torch.__spec__._initializing = False
    torch.cuda = types.SimpleNamespace(is_initialized=lambda: True, device_count=lambda: 2,
                                       memory=types.SimpleNamespace(memory_stats_as_nested_dict=lambda i: stats))
    torch._C = types.SimpleNamespace(_cuda_hasPrimaryContext=lambda i: i == 0,  # a context on GPU 0 only
                                     _cuda_attach_out_of_memory_observer=observers.append)
    sys.modules["torch"] = torch
    for _ in range(10):
        time.sleep(0.1)
        stats["num_device_free"] += 40
        stats["num_device_alloc"] += 40
    while not observers:
        time.sleep(0.05)
    stats["num_ooms"] += 1
    observers[0](0, 1 << 30, 140 << 30, 256 << 20)
""")


def test_a_python_workload_reports_its_allocator_through_the_injected_hook(tmp_path):
    script = tmp_path / "w.py"
    script.write_text(WORKLOAD)
    folder = tmp_path / "progress"
    folder.mkdir()
    argv, env, profile_dir = inject.prepare(
        [sys.executable, str(script)], dict(os.environ), steps=10, skip_s=0.0, gated=True
    )
    env[progress.DIR_ENV] = str(folder)
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    files = [n for n in os.listdir(folder) if n.startswith(allocator_counters.PREFIX)]
    assert len(files) == 1  # one process
    alloc = ProgressReader(folder).allocator()
    assert alloc is not None
    # the last read at exit has every count; only GPU 0, where the process holds a context, is counted
    assert alloc["cuda_frees"] == alloc["cuda_mallocs"] == 400
    assert alloc["ooms"] == 1 and alloc["reserved_bytes"] == 3 << 30 and alloc["allocated_bytes"] == 2 << 30
    assert alloc["oom_requested_bytes"] == 1 << 30 and alloc["oom_free_bytes"] == 256 << 20
    inject.clean(profile_dir)


def test_a_torch_that_counts_no_cudafree_reports_nothing_rather_than_zero(tmp_path):
    import types

    stats = {"num_alloc_retries": 0, "num_ooms": 0, "reserved_bytes": {"all": {"current": 1 << 30}}}
    old_torch = types.SimpleNamespace(
        cuda=types.SimpleNamespace(
            device_count=lambda: 1, memory=types.SimpleNamespace(memory_stats_as_nested_dict=lambda i: stats)
        ),
        _C=types.SimpleNamespace(),
    )
    allocator_counters.Counters(str(tmp_path)).read(old_torch)
    assert ProgressReader(tmp_path).allocator() is None  # unknown, so vram_pressure falls back to VRAM use


def test_the_allocator_counters_share_run_s_progress_folder():
    assert allocator_counters.DIR_ENV == progress.DIR_ENV
    assert allocator_counters.PREFIX != progress.PREFIX


def test_nothing_reported_is_none_not_zero(tmp_path):
    reader = ProgressReader(tmp_path)
    assert reader.totals() is None and reader.allocator() is None


def _sample(
    t: float,
    frees: float | None,
    retries: float = 0.0,
    ooms: float = 0.0,
    util: float = 99.0,
    sm: float | None = 70.0,
    used_gib: float = 40.0,
) -> Sample:
    work = WorkloadSample(pids=1, cpu_pct=100.0, top_thread_pct=100.0)
    if frees is not None:
        work = WorkloadSample(
            pids=1,
            cpu_pct=100.0,
            top_thread_pct=100.0,
            cuda_frees_total=frees,
            cuda_mallocs_total=frees,
            alloc_retries_total=retries,
            ooms_total=ooms,
            allocator_reserved_bytes=float(30 << 30),
            oom_requested_bytes=float(780 << 20) if ooms else None,
        )
    gpu = GpuSample(
        index=0,
        util_pct=util,
        sm_active_pct=sm,
        tensor_active_pct=50.0 if sm else None,
        used_bytes=int(used_gib * 2**30),
    )
    return Sample(t_s=t, gpus=[gpu], workload=work)


def test_cudafree_per_second_counts_from_the_previous_window_s_last_sample():
    w = Windower([0])
    for i in range(50):  # 5 Hz for 10 s, 60 frees a second, the counter read in steps (the hook writes at 2 Hz)
        t = 1000.0 + 0.2 * i
        w.add(_sample(t, frees=float(60 * (int(t * 2) / 2 - 1000.0))))
    w.close()
    rates = [x for x in w.host.column("cuda_frees_per_s") if x is not None]
    assert len(rates) >= 8
    assert 55 <= sorted(rates)[len(rates) // 2] <= 65  # no window loses the frees that fell between two windows
    assert sum(rates) / len(rates) > 50


H200 = GpuStatic(memory_total_bytes=141 << 30, gpm=True)


def test_a_full_gpu_whose_allocator_stays_still_is_not_under_pressure():
    # a KV-cache pool taken at start, 96% of VRAM, GEMMs at full speed (kv_prealloc_serving on the H200)
    full = WindowMetrics(
        t0_s=0,
        t1_s=1,
        util_pct=100.0,
        sm_active_pct=97.0,
        tensor_active_pct=94.0,
        used_bytes=0.96 * (141 << 30),
        cuda_frees_per_s=0.0,
        alloc_retries_per_s=0.0,
    )
    assert label(full, H200) == (B.compute_bound, [])
    # the same without an allocator report: GPM sees no gaps, so the allocator does not hold the SMs back
    blind = WindowMetrics(
        t0_s=0, t1_s=1, util_pct=100.0, sm_active_pct=97.0, tensor_active_pct=94.0, used_bytes=0.96 * (141 << 30)
    )
    assert label(blind, H200)[0] == B.compute_bound
    # without GPM nor report, GPU-Util cannot see a cudaFree's gaps: left possible
    no_gpm = WindowMetrics(t0_s=0, t1_s=1, util_pct=100.0, used_bytes=0.96 * (141 << 30))
    b, possible = label(no_gpm, GpuStatic(memory_total_bytes=141 << 30))
    assert b == B.compute_bound and B.vram_pressure in possible


def test_an_allocator_that_gives_memory_back_every_step_is_pressure_however_empty_the_gpu():
    # empty_cache() after every step with VRAM far from full: SM activity 0.74 of GPU-Util (empty_cache_loop)
    churn = WindowMetrics(
        t0_s=0,
        t1_s=1,
        util_pct=99.0,
        sm_active_pct=73.0,
        tensor_active_pct=53.0,
        used_bytes=float(20 << 30),
        cuda_frees_per_s=300.0,
    )
    assert label(churn, H200) == (B.vram_pressure, [])
    no_gpm = WindowMetrics(t0_s=0, t1_s=1, util_pct=99.0, used_bytes=float(20 << 30), cuda_frees_per_s=300.0)
    assert label(no_gpm, GpuStatic(memory_total_bytes=141 << 30))[0] == B.vram_pressure
    # under the threshold, or with the SMs saturated, the frees do not hold the GPU back
    rare = WindowMetrics(
        t0_s=0,
        t1_s=1,
        util_pct=99.0,
        sm_active_pct=73.0,
        tensor_active_pct=53.0,
        used_bytes=float(20 << 30),
        cuda_frees_per_s=ALLOC_CHURN.value / 2,
    )
    assert label(rare, H200)[0] == B.compute_bound
    saturated = WindowMetrics(
        t0_s=0,
        t1_s=1,
        util_pct=99.0,
        sm_active_pct=95.0,
        tensor_active_pct=80.0,
        used_bytes=float(20 << 30),
        cuda_frees_per_s=300.0,
    )
    assert label(saturated, H200)[0] == B.compute_bound


def test_a_full_gpu_with_gaps_and_no_allocator_report_is_still_pressure():
    # vram_churn as recorded before the allocator was reported: 96% GPU-Util, SM activity 27%, VRAM full
    m = WindowMetrics(
        t0_s=0, t1_s=1, util_pct=96.0, sm_active_pct=27.0, tensor_active_pct=26.0, used_bytes=0.97 * (141 << 30)
    )
    assert label(m, H200) == (B.vram_pressure, [])


def out_of_memory(windows: Windower) -> Finding | None:
    """The run's out-of-memory finding over a command run's windows, if any."""
    rec = Recording(kind="run", command=["python", "train.py"], meta=RunMeta(), gpus=[0], windows=windows)
    found = out_of_memory_rule.RULE.evaluate(evidence(rec, 1))
    return found[0] if found else None


def test_an_out_of_memory_error_is_a_finding_with_the_size_that_failed():
    w = Windower([0])
    for i in range(10):
        w.add(_sample(1000.0 + 0.2 * i, frees=0.0, ooms=1.0 if i >= 8 else 0.0))
    w.close()
    f = out_of_memory(w)
    assert f is not None and f.id == "run.out_of_memory"
    assert f.evidence["ooms"] == 1 and f.evidence["requested_mib"] == 780
    assert "780 MiB" in f.symptom
    quiet = Windower([0])
    for i in range(10):
        quiet.add(_sample(1000.0 + 0.2 * i, frees=0.0))
    quiet.close()
    assert out_of_memory(quiet) is None


# --- recorded on an H200 (2026-12-02): workloads written after the rules, the expected cause committed first ---

FIXTURES = Path(__file__).parent / "fixtures" / "h200"
FIRST = json.loads(gzip.decompress((FIXTURES / "runs_unseen5.json.gz").read_bytes()))  # before the counters
COUNTED = json.loads(gzip.decompress((FIXTURES / "runs_allocator.json.gz").read_bytes()))  # with them
GALLERY = json.loads(gzip.decompress((FIXTURES / "runs_gallery_allocator.json.gz").read_bytes()))


def test_a_kv_cache_pool_holding_96_percent_of_vram_is_compute_bound():
    # called vram_pressure on the H200 from VRAM use alone (134.9 GiB of 140), at 751 TFLOP/s
    assert FIRST["kv_prealloc_serving_gpm"]["verdict"] == "vram_pressure"
    for rec in (FIRST["kv_prealloc_serving_gpm"], COUNTED["kv_prealloc_serving_gpm"]):
        v = judged(rec).verdict.per_gpu["0"]
        assert v.bottleneck == B.compute_bound and not v.undecided_between
    counted = judged(COUNTED["kv_prealloc_serving_gpm"]).verdict.per_gpu["0"].evidence
    assert counted["used_bytes"] >= 0.95 * 140 * 2**30 and counted["cuda_frees_per_s"] == 0
    # without GPM the trace decided it (no allocator wait, GEMMs on tensor cores)
    assert judged(COUNTED["kv_prealloc_serving_nogpm"]).verdict.bottleneck == B.compute_bound


def test_empty_cache_every_step_is_named_by_the_sampler_from_the_allocator_s_frees():
    # 1,656 cudaFree a second at 4 GiB of VRAM: vram_pressure live, no profile needed (it needed one before)
    for name in ("empty_cache_loop_gpm", "empty_cache_loop_nogpm"):
        report = judged(COUNTED[name])
        v = report.verdict.per_gpu["0"]
        assert v.bottleneck == B.vram_pressure and not report.profile.asked, name
        assert v.evidence["cuda_frees_per_s"] > 1000 and "cudaFree" in v.summary
    assert judged(COUNTED["vram_churn_gpm"]).verdict.bottleneck == B.vram_pressure
    assert judged(COUNTED["vram_churn_fixed_gpm"]).verdict.bottleneck == B.compute_bound


def test_a_near_full_loop_whose_allocator_retries_now_and_then_stays_compute_bound():
    # 99% of VRAM in use, 5 retries in 10 s (a few frees every 4 s) while the SMs stay 97% busy: the old rule (VRAM
    # >= 95%) said vram_pressure; the GPU did not wait
    for name in ("near_full_retries_gpm", "near_full_retries_nogpm"):
        v = judged(COUNTED[name]).verdict.per_gpu["0"]
        assert v.bottleneck == B.compute_bound, name
        assert v.evidence["used_bytes"] >= 0.95 * 140 * 2**30
    retries = [
        s["workload"].get("alloc_retries_total")
        for s in COUNTED["near_full_retries_gpm"]["samples"]
        if s.get("workload")
    ]
    assert max(r for r in retries if r is not None) == 5


def test_a_crash_out_of_memory_gets_no_verdict_and_a_finding_with_the_allocation_that_failed():
    # 8 GiB left and batches up to 64k tokens: out of memory at the warm-up after 7 s of start-up with the GPU idle,
    # which the sampler had called input_starved
    report = judged(GALLERY["oom_crash"])
    v = report.verdict.per_gpu["0"]
    assert report.exit_code == 1 and report.verdict.bottleneck is None
    assert "out of GPU memory" in v.summary
    oom = next(f for f in report.findings if f.id == "run.out_of_memory")
    assert oom.evidence["requested_mib"] == 994 and oom.severity == Severity.critical
    assert not [f for f in report.findings if f.id.startswith("run.") and f.id != "run.out_of_memory"]
    # the first version's crash, recorded before the counters: one step, 0.8 s of steady state
    first = judged(FIRST["near_full_retries_gpm"])
    assert first.verdict.bottleneck is None and "before a steady state" in first.verdict.per_gpu["0"].summary


def test_the_gallery_under_the_allocator_counters_keeps_every_verdict():
    # each workload's cause as the manifest of recorded cases writes it down (tests/fixtures/cases.toml)
    manifest = load_manifest(FIXTURES.parent / "cases.toml")
    expected = {
        c.key: c.expected[0]
        for c in manifest
        if c.fixture == "h200/runs_gallery_allocator.json.gz" and c.key and c.expected[0] != "none"
    }
    assert len(expected) == 14
    for name, cause in expected.items():
        rec = GALLERY[name]
        assert rec["merged"] == cause, name  # as given on the H200
        assert judged(rec).verdict.bottleneck.value == cause, name
    frees = judged(GALLERY["gpt_loop"]).verdict.per_gpu["0"].evidence["cuda_frees_per_s"]
    assert frees == 0  # reported, and still: four DataLoader workers, fused AdamW


MONITORED = WORKLOAD.split("for _ in range(10):")[0] + textwrap.dedent("""
    import os, gputriage
    def seen():
        return [s.workload.cuda_frees_total for s in list(m.session.sampler.recent)
                if s.workload is not None and s.workload.cuda_frees_total is not None]

    with gputriage.monitor(period_s=0.05, isolated=ISOLATED) as m:
        for i in range(12):
            time.sleep(0.1)
            stats["num_device_free"] += 40
            deadline = time.time() + 60  # an early count read before the rest grow, however loaded the machine
            while not ISOLATED and i == 0 and not seen() and time.time() < deadline:
                time.sleep(0.05)
        deadline = time.time() + 60  # the block ends once the sampler has read the last count, however loaded
        while not ISOLATED and max(seen(), default=0) < 480 and time.time() < deadline:
            time.sleep(0.05)
    folder, thread = m._allocator_dir, m._allocator_thread
    print("thread alive", thread.is_alive(), "folder left", os.path.exists(folder))
    if not ISOLATED:
        frees = seen()
        print("frees", frees[0] < frees[-1], frees[-1] >= 400)
""")


def test_monitor_reports_the_allocator_of_the_block_it_samples(tmp_path):
    # the caller's own torch (here a stand-in that has initialized CUDA) gives memory back 40 times a step
    for isolated in (False, True):
        script = tmp_path / f"m{isolated}.py"
        script.write_text(MONITORED.replace("ISOLATED", str(isolated)))
        r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        assert "thread alive False folder left False" in r.stdout  # stopped and cleaned with the block
        if not isolated:
            assert "frees True True" in r.stdout  # read by the sampler as they grow (480 at the block's end)
