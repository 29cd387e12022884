"""The sampler's verdicts on real 10 Hz H200 streams (recorded with their known cause), replayed
through a fake NVML and the real sampler, and on streams with the host side recorded by gputriage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputriage.monitor.classify import from_flat_rows, verdict
from gputriage.monitor.sampler import Sampler
from gputriage.testing.stream_nvml import StreamNvml

SCENARIOS = json.loads((Path(__file__).parent / "fixtures" / "h200" / "scenario_samples.json").read_text())
H200 = {"memory_total_bytes": 150754820096, "power_limit_mw": 700000, "power_default_mw": 700000}
EXPECTED = {"healthy_bf16": "compute_bound", "input_starved": "input_starved", "fp32_no_tc": "tensor_cores_idle",
            "memory_bound_unfused": "memory_bound", "small_batch": "underfilled"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_streams_get_their_known_cause(name):
    v = verdict(from_flat_rows(SCENARIOS[name]["samples"]), 0, H200)
    assert v["bottleneck"] == EXPECTED[name]
    assert v["timeline"][0]["regime"] == "start-up"
    assert v["evidence"] and v["decision"]


def test_underfilled_evidence_names_the_gap_between_util_and_sm_activity():
    v = verdict(from_flat_rows(SCENARIOS["small_batch"]["samples"]), 0, H200)
    assert v["evidence"]["util_pct"] >= 90 and v["evidence"]["sm_active_pct"] < 30
    assert "SM activity" in v["summary"]


def test_without_host_data_the_starved_stream_says_what_it_cannot_tell():
    v = verdict(from_flat_rows(SCENARIOS["input_starved"]["samples"]), 0, H200)
    assert set(v["undecided_between"]) >= {"input_starved", "sync_bound"}


def test_a_power_cap_at_the_default_limit_is_not_throttling():
    v = verdict(from_flat_rows(SCENARIOS["healthy_bf16"]["samples"]), 0, H200)
    assert v["bottleneck"] == "compute_bound"
    lowered = dict(H200, power_limit_mw=400000)
    assert verdict(from_flat_rows(SCENARIOS["healthy_bf16"]["samples"]), 0, lowered)["bottleneck"] == "throttled"


@pytest.mark.parametrize("name", ["healthy_bf16", "fp32_no_tc", "small_batch"])
def test_the_real_sampler_on_a_replayed_stream(name, make_host):
    rows = SCENARIOS[name]["samples"]
    nvml = StreamNvml(rows)
    sampler = Sampler(nvml, make_host(), [0])
    samples = [sampler.sample_once() for _ in range(len(rows))]
    for s, r in zip(samples, rows):
        s["t"] = r["t"]
    g = samples[-1]["gpus"][0]
    assert set(g) >= {"util", "power", "sm_clk", "reasons", "temp", "used", "gpm"}
    assert verdict(samples, 0, H200)["bottleneck"] == EXPECTED[name]


def test_budgets_over_recorded_streams(tmp_path):
    from gputriage.monitor.budget import check_samples, load_budget

    path = tmp_path / "budget.toml"
    path.write_text("[budget]\nmax_power_pct_of_limit = 95\nmin_sm_active_pct = 40\nmax_temperature_c = 80\n")
    budget = load_budget(path)
    healthy = from_flat_rows(SCENARIOS["healthy_bf16"]["samples"])
    ids = {f.id for f in check_samples(budget, healthy, [0], {0: H200})}
    assert ids == {"budget.max_power_pct_of_limit"}  # ~690 W of 700 W; SM activity and temperature within budget
    small = from_flat_rows(SCENARIOS["small_batch"]["samples"])
    found = {f.id: f for f in check_samples(budget, small, [0], {0: H200})}
    assert found["budget.min_sm_active_pct"].evidence["observed"] < 40
    # 40 s of teardown after the last kernel are not the steady state the SM-activity budget is about
    last = healthy[-1]
    tail = [{"t": last["t"] + 0.1 * k, "gpus": [dict(last["gpus"][0], util=0, gpm={"2": 0.0})], "host": {}}
            for k in range(1, 401)]
    assert "budget.min_sm_active_pct" not in {f.id for f in check_samples(budget, healthy + tail, [0], {0: H200})}


def test_another_process_on_the_gpu_is_in_every_sample_and_names_contended(make_host):
    import os
    import time

    class Shared(StreamNvml):
        def call(self, fn, index=None, *args):
            if fn == "nvmlDeviceGetComputeRunningProcesses":
                return [{"pid": 4242, "usedGpuMemory": 2 << 30}]
            return super().call(fn, index, *args)

    rows = SCENARIOS["healthy_bf16"]["samples"]
    sampler = Sampler(Shared(rows), make_host(), [0], period_s=0.005, pid=os.getpid())
    sampler.start()
    deadline = time.monotonic() + 10
    while len(sampler.samples) < 60 and time.monotonic() < deadline:
        time.sleep(0.01)
    samples = sampler.stop()
    first = next(i for i, s in enumerate(samples) if s.get("others"))
    assert all(s.get("others") == [{"gpu": 0, "pid": 4242, "used": 2 << 30}] for s in samples[first:])
    # on the recorded compute-bound stream, a neighbour in every sample is the verdict
    recorded = from_flat_rows(rows)
    for s in recorded:
        s["others"] = samples[-1]["others"]
    v = verdict(recorded, 0, H200)
    assert v["bottleneck"] == "contended" and v["evidence"]["others_on_gpu"] == 1


def test_the_samplers_few_keys_read_like_the_full_parse():
    from gputriage.backends.procfs import keyed_values, parse_keyed

    host = json.loads((Path(__file__).parent / "fixtures/h200/snapshot_idle.json").read_text())["raw"]["host"]
    for path, keys in (("/proc/meminfo", ("MemAvailable", "SwapTotal", "SwapFree")),
                       ("/proc/vmstat", ("pgmajfault", "pswpin", "pswpout"))):
        text = host[path] if isinstance(host[path], str) else host[path][0]
        full = parse_keyed(text)
        assert keyed_values(text, keys) == {k: full[k] for k in keys if k in full}
    assert keyed_values("xpgmajfault 5\npgmajfault 7\n", ("pgmajfault",)) == {"pgmajfault": 7}  # line starts only
    assert keyed_values("pgmajfaultx 5\n", ("pgmajfault",)) == {}
    assert keyed_values("pgmajfaultx 5\npgmajfault 9\n", ("pgmajfault",)) == {"pgmajfault": 9}


def test_a_gap_in_the_samples_weighs_nothing():
    # the recorded compute-bound stream with 20 s left out in the middle (as the seconds a profiler
    # held the workload are): the window before the gap does not stretch over it
    samples = from_flat_rows(SCENARIOS["healthy_bf16"]["samples"])
    cut = len(samples) // 2
    for s in samples[cut:]:
        s["t"] += 20.0
    v = verdict(samples, 0, H200)
    whole = verdict(from_flat_rows(SCENARIOS["healthy_bf16"]["samples"]), 0, H200)
    assert v["bottleneck"] == whole["bottleneck"] == "compute_bound"
    assert abs(v["steady_s"] - whole["steady_s"]) <= 1.5


def test_the_gpu_idle_before_its_first_kernel_is_start_up_not_input_starved():
    # 5 s after the CUDA context exists (VRAM taken) with the GPU idle and one host thread busy
    # (imports, model building, kernel loading), then the recorded compute-bound stream
    body = from_flat_rows(SCENARIOS["healthy_bf16"]["samples"])
    t0, used = body[0]["t"], body[0]["gpus"][0].get("used", 0)
    body = [s for s in body if s["gpus"][0].get("util", 0) >= 50]  # its own idle start-up left out
    prefix = []
    for i in range(50):
        g = {"index": 0, "util": 0, "memutil": 0, "used": used + (0 if i < 5 else 600 * 2**20), "power": 90000,
             "gpm": {"2": 0.0, "3": 0.0, "5": 0.0, "10": 0.0}}
        prefix.append({"t": t0 + i * 0.1, "gpus": [g], "host": {"cpu": [100.0, 1.0, 0.5, 0.0], "iowait": 0.0},
                       "proc": {"pids": 1, "cpu_pct": 100.0, "top_thread_pct": 100.0, "vram": 600 * 2**20}})
    shift = t0 + 5.0 - body[0]["t"]
    for s in body:
        s["t"] += shift
        s["host"] = {"cpu": [100.0, 1.0, 0.5, 0.0], "iowait": 0.0}
        s["proc"] = {"pids": 1, "cpu_pct": 100.0, "top_thread_pct": 100.0, "vram": 2 * 2**30}
    v = verdict(prefix + body, 0, H200)
    assert v["startup_s"] >= 4.9
    assert v["timeline"][0] == {"start_s": 0.0, "end_s": v["startup_s"], "regime": "start-up"}
    assert v["bottleneck"] == "compute_bound" and "input_starved" not in v["shares"]


def test_a_kept_open_file_reads_its_new_content_each_time(tmp_path):
    from gputriage.backends.host import Host

    f = tmp_path / "stat"
    host = Host()
    f.write_text("cpu 1 2 3\n")
    assert host.reread(str(f)) == "cpu 1 2 3\n"
    f.write_text("cpu 4\n" + "x" * 40000)  # rewritten in place, longer than the first read's buffer
    text = host.reread(str(f))
    assert text.startswith("cpu 4\n") and len(text) == 40006
    host.close()
    assert host.reread(str(tmp_path / "gone")).reason == "not_found"


def test_the_time_after_the_last_kernel_is_shut_down_not_the_steady_state():
    # the recorded compute-bound stream, then 3 s of teardown: the GPU idle, one host thread busy
    # (DataLoader workers joined, a checkpoint written, the interpreter's exit)
    body = from_flat_rows(SCENARIOS["healthy_bf16"]["samples"])
    last = body[-1]
    tail = []
    for i in range(1, 31):
        g = dict(last["gpus"][0], util=0, gpm={"2": 0.0, "3": 0.0, "5": 0.0, "10": 0.0})
        tail.append({"t": last["t"] + 0.1 * i, "gpus": [g], "host": {"cpu": [100.0, 1.0], "iowait": 0.0},
                     "proc": {"pids": 1, "cpu_pct": 100.0, "top_thread_pct": 100.0}})
    v, alone = verdict(body + tail, 0, H200), verdict(body, 0, H200)
    assert v["timeline"][-1]["regime"] == "shut-down"
    assert v["timeline"][-1]["end_s"] - v["timeline"][-1]["start_s"] >= 3.0
    assert v["bottleneck"] == "compute_bound" and v["shares"] == alone["shares"]  # no input_starved
    assert v["steady_s"] == alone["steady_s"]


def test_a_long_idle_start_and_end_is_a_finding_about_the_paid_idle_gpu():
    from gputriage.monitor.session import run_findings

    body = from_flat_rows(SCENARIOS["healthy_bf16"]["samples"])
    last = body[-1]
    tail = [{"t": last["t"] + 0.1 * i, "gpus": [dict(last["gpus"][0], util=0, gpm={"2": 0.0})], "host": {}}
            for i in range(1, 401)]  # 40 s of teardown
    for samples, expected in ((body, False), (body + tail, True)):
        v = verdict(samples, 0, H200)
        found = [f for f in run_findings({0: v}, samples) if f.id == "run.idle_edges"]
        assert bool(found) == expected
    assert found[0].evidence["shutdown_s"] >= 40 and "after its last" in found[0].symptom

    # the terminal report prints it under the verdict (which does not repeat it)
    from rich.console import Console

    from gputriage.report.run_terminal import render

    console = Console(record=True, width=100)
    render({"kind": "run", "command": ["python", "train.py"], "meta": {"gpus": {"0": {}}}}, {"0": v}, found, console)
    assert "held but idle" in console.export_text()


def test_the_gpu_processes_are_listed_once_a_second_for_vram_and_neighbours(make_host):
    import math
    import os
    import time

    asked = []

    class Counting(StreamNvml):
        def call(self, fn, index=None, *args):
            if fn == "nvmlDeviceGetComputeRunningProcesses":
                asked.append(fn)
                return [{"pid": os.getpid(), "usedGpuMemory": 1 << 30}, {"pid": 4242, "usedGpuMemory": 2 << 30}]
            return super().call(fn, index, *args)

    sampler = Sampler(Counting(SCENARIOS["healthy_bf16"]["samples"]), make_host(), [0], period_s=0.005,
                      pid=os.getpid())
    sampler.start()
    deadline = time.monotonic() + 10
    while len(sampler.samples) < 45 and time.monotonic() < deadline:
        time.sleep(0.01)
    samples = sampler.stop()
    # every 10th sample reads the tree's VRAM, every 20th the neighbours too: from the same listing
    assert len(asked) == math.ceil(len(samples) / 10)
    assert samples[-1]["proc"]["vram"] == 1 << 30 and samples[-1]["others"][0]["pid"] == 4242


RUNS = json.loads(__import__("gzip").decompress(
    (Path(__file__).parent / "fixtures" / "h200" / "run_samples.json.gz").read_bytes()))


@pytest.mark.parametrize("name, expected", [
    ("input_starved", "input_starved"), ("launch_bound", "launch_bound"), ("item_sync", "sync_bound"),
    ("input_starved_fixed", "compute_bound"), ("launch_bound_fixed", "compute_bound"),
    ("item_sync_fixed", "compute_bound")])
def test_recorded_runs_with_their_host_side_get_their_cause(name, expected):
    # whole `gputriage run` recordings (GPU, host and process tree) of the pathology scripts on an H200
    v = verdict(RUNS[name]["samples"], 0, H200)
    assert v["bottleneck"] == expected, v["summary"]


def test_short_kernels_behind_a_busy_thread_are_launch_bound_and_large_ones_are_not():
    v = verdict(RUNS["launch_bound"]["samples"], 0, H200)
    e = v["evidence"]
    assert e["top_thread_pct"] >= 85 and e["sm_active_pct"] < 0.5 * e["util_pct"]
    # the same stream with kernels that cover the SMs while they run: the host is busy with something else
    filled = json.loads(json.dumps(RUNS["launch_bound"]["samples"]))
    for s in filled:
        for g in s["gpus"]:
            if "gpm" in g and g.get("util"):
                g["gpm"]["2"] = 0.9 * g["util"]
    assert verdict(filled, 0, H200)["bottleneck"] != "launch_bound"


def test_the_workloads_reads_are_the_evidence_of_an_input_pipeline():
    v = verdict(RUNS["input_starved"]["samples"], 0, H200)
    assert v["evidence"]["read_mbps"] >= 20 and "reads" in v["summary"]
    assert v["undecided_between"] == ["input_starved", "sync_bound"]  # a spinning sync looks the same
    no_reads = json.loads(json.dumps(RUNS["input_starved"]["samples"]))
    for s in no_reads:
        s.get("proc", {}).pop("io_rchar_bps", None)
    v = verdict(no_reads, 0, H200)
    # GPU-Util ~40% with big kernels and no input read: a sync keeping host work from overlapping comes first
    assert v["bottleneck"] == "sync_bound" and "input_starved" in v["undecided_between"]
