"""The sampler's verdicts on real H200 streams (recorded with their known cause), replayed through a
fake NVML and the real sampler, and on whole `gputriage run` recordings with the host side."""

from __future__ import annotations

import copy
import gzip
import json
import threading
from pathlib import Path

import msgspec
import pytest

from conftest import H200_STATIC, judged, verdict_of
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Severity
from gputriage.model.sample import GpuSample, HostSample, Neighbour, Sample, WorkloadSample
from gputriage.sampling.sampler import Cadences, Sampler
from gputriage.testing.recorded import from_flat_rows, from_untyped
from gputriage.testing.stream_nvml import StreamNvml

FIXTURES = Path(__file__).parent / "fixtures" / "h200"
SCENARIOS = json.loads((FIXTURES / "scenario_samples.json").read_text())
EXPECTED = {
    "healthy_bf16": "compute_bound",
    "input_starved": "input_starved",
    "fp32_no_tc": "tensor_cores_idle",
    "memory_bound_unfused": "memory_bound",
    "small_batch": "underfilled",
}


class _NoPause(threading.Event):
    """The sampler's stop event, without the pause between samples: its cadences count samples, not seconds,
    so a test of them needs neither a clock nor an idle machine."""

    def wait(self, timeout: float | None = None) -> bool:
        return self.is_set()


def stream(name: str) -> list[Sample]:
    return from_flat_rows(SCENARIOS[name]["samples"])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_streams_get_their_known_cause(name):
    v = verdict_of(stream(name))
    assert v.bottleneck == EXPECTED[name]
    assert v.timeline[0].regime == "start-up"
    assert v.evidence and v.decision


def test_underfilled_evidence_names_the_gap_between_util_and_sm_activity():
    v = verdict_of(stream("small_batch"))
    assert v.evidence["util_pct"] >= 90 and v.evidence["sm_active_pct"] < 30
    assert "SM activity" in v.summary


def test_without_host_data_the_starved_stream_says_what_it_cannot_tell():
    v = verdict_of(stream("input_starved"))
    assert {B.input_starved, B.sync_bound} <= set(v.undecided_between)


def test_a_power_cap_at_the_default_limit_is_not_throttling():
    assert verdict_of(stream("healthy_bf16")).bottleneck == B.compute_bound
    lowered = msgspec.structs.replace(H200_STATIC, power_limit_mw=400000)
    assert verdict_of(stream("healthy_bf16"), lowered).bottleneck == B.throttled


@pytest.mark.parametrize("name", ["healthy_bf16", "fp32_no_tc", "small_batch"])
def test_the_real_sampler_on_a_replayed_stream(name, make_host):
    rows = SCENARIOS[name]["samples"]
    sampler = Sampler(StreamNvml(rows), make_host(), [0], cadences=Cadences(gpu_s=0.1))
    samples = [sampler.sample_once() for _ in range(len(rows))]
    for s, r in zip(samples, rows):
        s.t_s = r["t"]
    g = samples[-1].gpus[0]
    assert None not in (
        g.util_pct,
        g.power_mw,
        g.sm_clock_mhz,
        g.clock_event_reasons,
        g.temperature_c,
        g.used_bytes,
        g.sm_active_pct,
    )
    assert verdict_of(samples).bottleneck == EXPECTED[name]


def test_budgets_over_recorded_streams(tmp_path):
    from gputriage.diagnosis.budget import load_budget

    path = tmp_path / "budget.toml"
    path.write_text("[budget]\nmax_power_pct_of_limit = 95\nmin_sm_active_pct = 40\nmax_temperature_c = 80\n")
    budget = load_budget(path)
    healthy = stream("healthy_bf16")

    def budget_ids(samples):
        return {f.id: f for f in judged(samples, budget=budget).findings if f.id.startswith("budget.")}

    assert set(budget_ids(healthy)) == {"budget.max_power_pct_of_limit"}  # ~690 W of 700 W; SM and temp fine
    assert budget_ids(stream("small_batch"))["budget.min_sm_active_pct"].evidence["observed"] < 40
    # 40 s of teardown after the last kernel are not the steady state the SM-activity budget is about
    last = healthy[-1]
    tail = [
        Sample(t_s=last.t_s + 0.1 * k, gpus=[msgspec.structs.replace(last.gpus[0], util_pct=0, sm_active_pct=0.0)])
        for k in range(1, 401)
    ]
    assert "budget.min_sm_active_pct" not in budget_ids(healthy + tail)


def test_another_process_on_the_gpu_is_in_every_sample_and_names_contended(make_host):
    import os
    import time

    class Shared(StreamNvml):
        def call(self, fn, index=None, *args):
            if fn == "nvmlDeviceGetComputeRunningProcesses":
                return [{"pid": 4242, "usedGpuMemory": 2 << 30}]
            return super().call(fn, index, *args)

    rows = SCENARIOS["healthy_bf16"]["samples"]
    got: list[Sample] = []
    sampler = Sampler(
        Shared(rows), make_host(), [0], cadences=Cadences(gpu_s=0.005), pid=os.getpid(), sinks=(got.append,)
    )
    sampler._stop = _NoPause()
    sampler.start()
    deadline = time.monotonic() + 10
    while len(got) < 1200 and time.monotonic() < deadline:
        time.sleep(0.01)
    sampler.stop()
    first = next(i for i, s in enumerate(got) if s.neighbours)
    assert all(s.neighbours == [Neighbour(gpu=0, pid=4242, used_bytes=2 << 30)] for s in got[first:])
    # on the recorded compute-bound stream, a neighbour in every sample is the verdict
    recorded = stream("healthy_bf16")
    for s in recorded:
        s.neighbours = got[-1].neighbours
    v = verdict_of(recorded)
    assert v.bottleneck == B.contended and v.evidence["neighbours"] == 1


def test_the_samplers_few_keys_read_like_the_full_parse():
    from gputriage.backends.procfs import keyed_values, parse_keyed

    host = json.loads((FIXTURES / "snapshot_idle.json").read_text())["raw"]["host"]
    for path, keys in (
        ("/proc/meminfo", ("MemAvailable", "SwapTotal", "SwapFree")),
        ("/proc/vmstat", ("pgmajfault", "pswpin", "pswpout")),
    ):
        text = host[path] if isinstance(host[path], str) else host[path][0]
        full = parse_keyed(text)
        assert keyed_values(text, keys) == {k: full[k] for k in keys if k in full}
    assert keyed_values("xpgmajfault 5\npgmajfault 7\n", ("pgmajfault",)) == {"pgmajfault": 7}  # line starts only
    assert keyed_values("pgmajfaultx 5\n", ("pgmajfault",)) == {}
    assert keyed_values("pgmajfaultx 5\npgmajfault 9\n", ("pgmajfault",)) == {"pgmajfault": 9}


def test_a_gap_in_the_samples_weighs_nothing():
    # the recorded compute-bound stream with 20 s left out in the middle (as the seconds a profiler
    # held the workload are): the window before the gap does not stretch over it
    samples = stream("healthy_bf16")
    for s in samples[len(samples) // 2 :]:
        s.t_s += 20.0
    v, whole = verdict_of(samples), verdict_of(stream("healthy_bf16"))
    assert v.bottleneck == whole.bottleneck == B.compute_bound
    assert abs(v.steady_s - whole.steady_s) <= 1.5


def _busy_host(s: Sample, vram: int) -> Sample:
    s.host = HostSample(cpu_busy_pct=[100.0, 1.0, 0.5, 0.0], iowait_pct=0.0)
    s.workload = WorkloadSample(pids=1, cpu_pct=100.0, top_thread_pct=100.0, vram_bytes=vram)
    return s


def test_the_gpu_idle_before_its_first_kernel_is_start_up_not_input_starved():
    # 5 s after the CUDA context exists (VRAM taken) with the GPU idle and one host thread busy
    # (imports, model building, kernel loading), then the recorded compute-bound stream
    body = stream("healthy_bf16")
    t0, used = body[0].t_s, body[0].gpus[0].used_bytes or 0
    body = [s for s in body if (s.gpus[0].util_pct or 0) >= 50]  # its own idle start-up left out
    prefix = [
        _busy_host(
            Sample(
                t_s=t0 + i * 0.1,
                gpus=[
                    GpuSample(
                        index=0,
                        util_pct=0,
                        mem_util_pct=0,
                        used_bytes=used + (0 if i < 5 else 600 * 2**20),
                        power_mw=90000,
                        sm_active_pct=0.0,
                        sm_occupancy_pct=0.0,
                        tensor_active_pct=0.0,
                        dram_active_pct=0.0,
                    )
                ],
            ),
            600 * 2**20,
        )
        for i in range(50)
    ]
    shift = t0 + 5.0 - body[0].t_s
    for s in body:
        s.t_s += shift
        _busy_host(s, 2 * 2**30)
    v = verdict_of(prefix + body)
    assert v.startup_s >= 4.9
    assert (v.timeline[0].start_s, v.timeline[0].end_s, v.timeline[0].regime) == (0.0, v.startup_s, "start-up")
    assert v.bottleneck == B.compute_bound and "input_starved" not in v.shares


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


def _teardown(body: list[Sample], seconds: float, busy_host: bool) -> list[Sample]:
    last = body[-1]
    idle = msgspec.structs.replace(
        last.gpus[0], util_pct=0, sm_active_pct=0.0, sm_occupancy_pct=0.0, tensor_active_pct=0.0, dram_active_pct=0.0
    )
    tail = [Sample(t_s=last.t_s + 0.1 * i, gpus=[idle]) for i in range(1, int(seconds * 10) + 1)]
    return [_busy_host(s, 0) for s in tail] if busy_host else tail


def test_the_time_after_the_last_kernel_is_shut_down_not_the_steady_state():
    # the recorded compute-bound stream, then 3 s of teardown: the GPU idle, one host thread busy
    # (DataLoader workers joined, a checkpoint written, the interpreter's exit)
    body = stream("healthy_bf16")
    v, alone = verdict_of(body + _teardown(body, 3.0, busy_host=True)), verdict_of(body)
    assert v.timeline[-1].regime == "shut-down"
    assert v.timeline[-1].end_s - v.timeline[-1].start_s >= 3.0
    assert v.bottleneck == B.compute_bound and v.shares == alone.shares  # no input_starved
    assert v.steady_s == alone.steady_s


def test_a_long_idle_start_and_end_is_a_finding_about_the_paid_idle_gpu():
    from rich.console import Console

    from gputriage.report.run_terminal import render

    body = stream("healthy_bf16")
    for samples, expected in ((body, False), (body + _teardown(body, 40.0, busy_host=False), True)):
        report = judged(samples)
        found = [f for f in report.findings if f.id == "run.idle_edges"]
        assert bool(found) == expected
    assert found[0].evidence["shutdown_s"] >= 39 and "after its last" in found[0].symptom
    # the terminal report prints it under the verdict (which does not repeat it)
    console = Console(record=True, width=100)
    render(report, console)
    assert "held but idle" in console.export_text()


def test_the_gpu_processes_are_listed_once_a_second_for_vram_and_neighbours(make_host):
    import os
    import time

    asked = []

    class Counting(StreamNvml):
        def call(self, fn, index=None, *args):
            if fn == "nvmlDeviceGetComputeRunningProcesses":
                asked.append(fn)
                return [{"pid": os.getpid(), "usedGpuMemory": 1 << 30}, {"pid": 4242, "usedGpuMemory": 2 << 30}]
            return super().call(fn, index, *args)

    got: list[Sample] = []
    sampler = Sampler(
        Counting(SCENARIOS["healthy_bf16"]["samples"]),
        make_host(),
        [0],
        cadences=Cadences(gpu_s=0.01),
        pid=os.getpid(),
        sinks=(got.append,),
    )
    sampler._stop = _NoPause()
    sampler.start()
    deadline = time.monotonic() + 10
    while len(got) < 450 and time.monotonic() < deadline:
        time.sleep(0.01)
    sampler.stop()
    # the tree's VRAM is read once a second (every 100 ticks here), the neighbours every 2 s: one listing each time
    assert len(asked) == -(-len(got) // 100)
    assert got[-1].workload.vram_bytes == 1 << 30 and got[-1].neighbours[0].pid == 4242


def test_cadences_are_seconds_whatever_the_period():
    for period in (0.02, 0.1, 0.2, 1.0, 5.0):
        c = Cadences(gpu_s=period)
        assert c.every(c.host_s) * period == pytest.approx(max(period, 1.0), rel=0.01)
        assert c.every(c.tree_s) * period == pytest.approx(max(period, 5.0), rel=0.01)


RUNS = json.loads(gzip.decompress((FIXTURES / "run_samples.json.gz").read_bytes()))


def run_samples(name: str) -> list[Sample]:
    return from_untyped(RUNS[name]["samples"])


@pytest.mark.parametrize(
    "name, expected",
    [
        ("input_starved", "input_starved"),
        ("launch_bound", "launch_bound"),
        ("item_sync", "sync_bound"),
        ("input_starved_fixed", "compute_bound"),
        ("launch_bound_fixed", "compute_bound"),
        ("item_sync_fixed", "compute_bound"),
    ],
)
def test_recorded_runs_with_their_host_side_get_their_cause(name, expected):
    # whole `gputriage run` recordings (GPU, host and process tree) of the pathology scripts on an H200
    v = verdict_of(run_samples(name))
    assert v.bottleneck == expected, v.summary


def test_short_kernels_behind_a_busy_thread_are_launch_bound_and_large_ones_are_not():
    v = verdict_of(run_samples("launch_bound"))
    e = v.evidence
    assert e["top_thread_pct"] >= 85 and e["sm_active_pct"] < 0.5 * e["util_pct"]
    # the same stream with kernels that cover most SMs, each with few warps (occupancy 0.05 of GPU-Util, as
    # the ensemble of small MLPs recorded on the H200): still short kernels
    few_warps = copy.deepcopy(run_samples("launch_bound"))
    for s in few_warps:
        for g in s.gpus:
            if g.sm_active_pct is not None and g.util_pct:
                g.sm_active_pct = 0.6 * g.util_pct
    assert verdict_of(few_warps).bottleneck == B.launch_bound
    # kernels that fill the SMs with warps while they run (a sync-bound loop's 0.9 and 0.38): the host is busy
    # with something else
    filled = copy.deepcopy(few_warps)
    for s in filled:
        for g in s.gpus:
            if g.sm_active_pct is not None and g.util_pct:
                g.sm_active_pct, g.sm_occupancy_pct = 0.9 * g.util_pct, 0.38 * g.util_pct
    assert verdict_of(filled).bottleneck != B.launch_bound


def test_the_workloads_reads_are_the_evidence_of_an_input_pipeline():
    v = verdict_of(run_samples("input_starved"))
    assert v.evidence["read_mb_per_s"] >= 20 and "reads" in v.summary
    assert v.undecided_between == [B.input_starved, B.sync_bound]  # a spinning sync looks the same
    no_reads = run_samples("input_starved")
    for s in no_reads:
        if s.workload is not None:
            s.workload.rchar_bytes_per_s = None
    v = verdict_of(no_reads)
    # GPU-Util ~40% with big kernels and no input read: a sync keeping host work from overlapping comes first
    assert v.bottleneck == B.sync_bound and B.input_starved in v.undecided_between


TYPED = json.loads(gzip.decompress((FIXTURES / "runs_typed.json.gz").read_bytes()))
HOST_WORK = {"host_stats", "cpu_optimizer"}  # recorded as sync_bound and launch_bound on the H200


@pytest.mark.parametrize("name", sorted(TYPED))
def test_runs_recorded_by_the_typed_sampler_replay_to_the_verdict_given_on_the_h200(name):
    # the gallery under `gputriage run` on an H200 (2026-12-01): the samples the store kept, judged again
    from gputriage.diagnosis.run.judge import judge
    from gputriage.model.run import RunMeta
    from gputriage.sampling.session import replay

    rec = TYPED[name]
    samples = [msgspec.convert(s, Sample) for s in rec["samples"]]
    report = judge(replay(samples, msgspec.convert(rec["meta"], RunMeta), command=rec["command"]), rec["exit_code"])
    expected = {
        "contended": "contended",
        "fp32_no_tensor_cores": "tensor_cores_idle",
        "healthy": "compute_bound",
        "input_starved": "input_starved",
        "item_sync": "sync_bound",
        "launch_bound": "launch_bound",
        "pageable_copy": "h2d_copy_bound",
        "small_batch": "underfilled",
        "unfused_elementwise": "memory_bound",
        "vram_churn": "vram_pressure",
        "job_shares_gpu": "contended",
        "host_stats": "host_bound",
        "cpu_optimizer": "host_bound",
        "gpt_loop": "compute_bound",
    }.get(name)
    # the verdict given on the H200, but where the judge has learnt since (host work had no name of its own)
    assert report.verdict.bottleneck == (expected if name in HOST_WORK else rec["verdict"])
    if expected:
        assert report.verdict.bottleneck == expected
    else:  # a fixed version raises no warning
        assert not [f.id for f in report.findings if f.severity >= Severity.warn]


NO_GPM = {
    "launch_bound": "launch_bound",
    "pageable_copy": "h2d_copy_bound",
    "pageable_copy_fixed": "h2d_copy_bound",
    "small_batch": "underfilled",
    "fp32_no_tensor_cores": "compute_bound",
    "input_starved": "input_starved",
    "item_sync": "sync_bound",
    "unfused_elementwise": "memory_bound",
    "contended": "contended",
    "healthy": "compute_bound",
    "unfused_elementwise_fixed": "memory_bound",
    "job_shares_gpu": "contended",
    "host_stats": "host_bound",
    "cpu_optimizer": "host_bound",
}


@pytest.mark.parametrize("name", sorted(TYPED))
def test_without_gpm_power_and_pcie_tell_what_sm_activity_would(name):
    # the same H200 recordings as a GPU before Hopper sees them: no SM activity, occupancy, tensor or
    # DRAM activity; PCIe traffic as the PCIe counters every GPU has would give it
    from gputriage.diagnosis.run.judge import judge
    from gputriage.model.run import RunMeta
    from gputriage.sampling.session import replay

    rec = TYPED[name]
    samples = [msgspec.convert(s, Sample) for s in rec["samples"]]
    for s in samples:
        s.gpus = [
            msgspec.structs.replace(
                g, sm_active_pct=None, sm_occupancy_pct=None, tensor_active_pct=None, dram_active_pct=None
            )
            for g in s.gpus
        ]
    report = judge(replay(samples, msgspec.convert(rec["meta"], RunMeta)), 0)
    v = report.verdict.per_gpu["0"]
    assert v.bottleneck == NO_GPM.get(name, "compute_bound"), v.summary
    if name == "fp32_no_tensor_cores":  # tensor cores cannot be told from CUDA cores: said, and left to --profile
        assert B.tensor_cores_idle in v.undecided_between
    if name == "vram_churn":  # full VRAM at GPU-Util 96%, no allocator report: GPU-Util cannot see cudaFree's gaps
        assert B.vram_pressure in v.undecided_between
    if name.endswith("_fixed") and name != "pageable_copy_fixed":
        assert not [f.id for f in report.findings if f.severity >= Severity.warn]


def test_without_gpm_the_sampler_reads_the_pcie_counters(make_host):
    class PreHopper(StreamNvml):
        def gpm_sample(self, index, into=None):
            from gputriage.model.reading import Unavailable

            return Unavailable("not_supported", "no GPM before Hopper")

        def call(self, fn, index=None, *args):
            if fn == "nvmlDeviceGetPcieThroughput":
                return 6_000_000 if args[0] == 1 else 50_000  # KiB/s: pageable copies to the GPU
            return super().call(fn, index, *args)

    sampler = Sampler(PreHopper(SCENARIOS["healthy_bf16"]["samples"]), make_host(), [0], cadences=Cadences(gpu_s=0.1))
    g = sampler.sample_once().gpus[0]
    assert g.sm_active_pct is None and g.pcie_rx_mib_per_s == pytest.approx(5859.4, abs=0.1)


@pytest.mark.parametrize("name", sorted(TYPED))
def test_a_timeline_names_no_bottleneck_before_the_steady_state(name):
    # what runs before the dominant regime, when shorter than it, is warm-up: kernels loading, the allocator
    # growing (the fixed vram_churn run spent 1 s idle and 3 s in syncs first), not a bottleneck to act on
    from gputriage.diagnosis.run.judge import judge
    from gputriage.model.run import RunMeta
    from gputriage.sampling.session import replay

    rec = TYPED[name]
    samples = [msgspec.convert(s, Sample) for s in rec["samples"]]
    v = judge(replay(samples, msgspec.convert(rec["meta"], RunMeta)), 0).verdict.per_gpu["0"]
    body = [t.regime for t in v.timeline if t.regime not in ("start-up", "shut-down")]
    assert body[0] in ("warm-up", v.bottleneck.value), v.timeline
    assert body.count("warm-up") <= 1


@pytest.mark.parametrize("name", sorted(HOST_WORK))
def test_the_host_computing_while_the_gpu_waits_is_host_bound_not_input_or_launch(name):
    # numpy statistics on an activation copied back every step (PCIe TX 220-260 MiB/s, one thread), and AdamW
    # on CPU copies of the parameters (7 cores, 1 GiB/s back): recorded on the H200 as sync_bound and
    # launch_bound, with DataLoader or CUDA-graph advice that does nothing for either
    from gputriage.diagnosis.run.judge import judge
    from gputriage.model.run import RunMeta
    from gputriage.sampling.session import replay

    rec = TYPED[name]
    samples = [msgspec.convert(s, Sample) for s in rec["samples"]]
    v = judge(replay(samples, msgspec.convert(rec["meta"], RunMeta)), 0).verdict.per_gpu["0"]
    assert v.bottleneck == B.host_bound
    assert "on the GPU" in v.decision and "DataLoader" not in v.decision
    if name == "host_stats":  # one thread: what tells is what it reads back
        assert v.evidence["pcie_tx_mib_per_s"] >= 100 and v.evidence["workload_cpu_pct"] < 150
    else:
        assert v.evidence["workload_cpu_pct"] >= 250
    # a launch-bound loop at the same GPU-Util reads little back and runs on one core
    launch = judge(
        replay(
            [msgspec.convert(s, Sample) for s in TYPED["launch_bound"]["samples"]],
            msgspec.convert(TYPED["launch_bound"]["meta"], RunMeta),
        ),
        0,
    ).verdict.per_gpu["0"]
    assert launch.bottleneck == B.launch_bound and launch.evidence["pcie_tx_mib_per_s"] < 100


def test_ranks_of_a_ddp_job_each_on_one_core_are_not_host_computation():
    # the CPU of a job's ranks adds up (the 2-rank DDP job recorded on two H200s: 199% of a core, 100% per
    # rank); judged per process holding a GPU context, four ranks at 100-120% each are not host computation
    from gputriage.diagnosis.run.classify import label
    from gputriage.model.run import GpuStatic
    from gputriage.model.window import WindowMetrics

    ddp = json.loads(gzip.decompress((FIXTURES / "runs_typed_2gpu.json.gz").read_bytes()))["ddp_allreduce"]
    busy = [s for s in ddp["samples"] if (s.get("workload") or {}).get("cpu_pct", 0) > 150 and s.get("job_processes")]
    assert busy and all(len({p["pid"] for p in s["job_processes"]}) == 2 for s in busy)
    m = WindowMetrics(
        t0_s=0,
        t1_s=1,
        util_pct=40.0,
        sm_active_pct=36.0,
        workload_cpu_pct=440.0,
        top_thread_pct=99.0,
        read_mb_per_s=0.0,
        pcie_tx_mib_per_s=13.0,
        job_gpu_processes=4.0,
    )
    assert label(m, GpuStatic())[0] == B.sync_bound
    one = msgspec.structs.replace(m, job_gpu_processes=1.0)
    assert label(one, GpuStatic())[0] == B.host_bound


def test_nvlink_payload_is_sampled_through_gpm_and_through_the_counters_before_hopper(make_host):
    from gputriage.backends.nvml import ALL_LINKS, FI_NVLINK_DATA_RX_KIB, FI_NVLINK_DATA_TX_KIB, field_key
    from gputriage.model.reading import Unavailable

    class Hopper(StreamNvml):  # GPM's NVLink metrics, MiB/s over the interval
        def gpm_metrics(self, index, first, second, metric_ids=()):
            got = super().gpm_metrics(index, first, second, metric_ids)
            got["metrics"].update({"60": 1200.0, "61": 90000.0})
            return got

    g = (
        Sampler(Hopper(SCENARIOS["healthy_bf16"]["samples"]), make_host(), [0], cadences=Cadences(gpu_s=0.1))
        .sample_once()
        .gpus[0]
    )
    assert (g.nvlink_rx_mib_per_s, g.nvlink_tx_mib_per_s) == (1200.0, 90000.0)

    keys = (field_key(FI_NVLINK_DATA_TX_KIB, ALL_LINKS), field_key(FI_NVLINK_DATA_RX_KIB, ALL_LINKS))
    counters = {keys[0]: 1_000_000.0, keys[1]: 5_000.0}  # cumulative KiB

    class Ampere(StreamNvml):
        def gpm_sample(self, index, into=None):
            return Unavailable("not_supported", "no GPM before Hopper")

        def field_values(self, index, fields):
            assert [field_key(f, s) for f, s in fields] == list(keys)
            counters[keys[0]] += 2 * 2**20  # 2 GiB sent between two reads
            return dict(counters)

    sampler = Sampler(
        Ampere(SCENARIOS["healthy_bf16"]["samples"]), make_host(), [0], cadences=Cadences(gpu_s=0.1, gpu_slow_s=0.1)
    )  # the slow fields every sample
    first = sampler.sample_once().gpus[0]
    assert first.nvlink_tx_mib_per_s is None  # one reading of a counter is no rate
    import time

    time.sleep(0.2)
    g = sampler.sample_once().gpus[0]
    assert 0 < g.nvlink_tx_mib_per_s <= 2048 / 0.2 and g.nvlink_rx_mib_per_s == 0.0


def test_the_non_tensor_math_pipes_are_sampled_and_a_window_keeps_the_busiest(make_host):
    from gputriage.sampling.windows import metrics_of

    class Hopper(StreamNvml):  # GPM's FP64/FP32/FP16 pipe activity, % of the interval
        def gpm_metrics(self, index, first, second, metric_ids=()):
            got = super().gpm_metrics(index, first, second, metric_ids)
            got["metrics"].update({"11": 0.5, "12": 76.7, "13": 3.0})
            return got

    nvml = Hopper(SCENARIOS["fp32_no_tc"]["samples"])
    s = Sampler(nvml, make_host(), [0], cadences=Cadences(gpu_s=0.1)).sample_once()
    g = s.gpus[0]
    assert (g.fp64_active_pct, g.fp32_active_pct, g.fp16_active_pct) == (0.5, 76.7, 3.0)
    assert metrics_of([s], 0).cuda_math_active_pct == 76.7


@pytest.mark.parametrize(
    "tensor, rx, expected, possible",
    [
        (8.0, 150_000.0, B.comm_bound, []),  # links at 0.33 of NV18, the tensor pipes resting: the all-reduce leads
        # as busy, with the tensor cores at work: overlap possible (and SMs at 55% of GPU-Util: gaps or small kernels)
        (60.0, 150_000.0, B.compute_bound, [B.underfilled, B.comm_bound]),
        (8.0, 20_000.0, B.compute_bound, []),  # 0.04 of the links: the collectives are not what the GPU does
        (None, 150_000.0, B.comm_bound, []),  # without GPM the links alone tell it
    ],
)
def test_busy_nvlinks_name_comm_bound_unless_the_tensor_cores_are_busy(tensor, rx, expected, possible):
    from gputriage.diagnosis.run.classify import label
    from gputriage.model.run import GpuStatic
    from gputriage.model.window import WindowMetrics

    h200 = GpuStatic(nvlink_links=18, nvlink_link_mb_per_s=26_562.0, power_limit_mw=700_000)
    sm = 55.0 if tensor is not None else None
    m = WindowMetrics(
        t0_s=0,
        t1_s=1,
        util_pct=100.0,
        sm_active_pct=sm,
        tensor_active_pct=tensor,
        dram_active_pct=20.0,
        nvlink_rx_mib_per_s=rx,
        nvlink_tx_mib_per_s=rx * 0.98,
        power_w=400.0,
    )
    assert label(m, h200) == (expected, possible)
    assert label(m, GpuStatic(power_limit_mw=700_000))[0] != B.comm_bound  # links not counted: never from them


def test_a_gpus_nvlinks_are_read_once_with_its_static_facts(h200):
    from gputriage.sampling.session import gpu_static

    h200.set("nvmlDeviceGetFieldValues", 0, {"91/0": 18.0, "90/0": 26562.0}, "91/0", "90/0")
    _, static, _ = gpu_static(h200)
    assert (static[0].nvlink_links, static[0].nvlink_link_mb_per_s) == (18, 26562.0)
    _, static, _ = gpu_static(h200.set("nvmlDeviceGetFieldValues", 0, {}, "91/0", "90/0"))  # as a VM gives it
    assert static[0].nvlink_links is None


UNSEEN = json.loads(gzip.decompress((FIXTURES / "runs_unseen.json.gz").read_bytes()))


@pytest.mark.parametrize(
    "name, expected",
    [
        ("decode_gemv_gpm", "memory_bound"),
        ("decode_gemv_nogpm", "memory_bound"),  # batch-1 decode: 3.6 TB/s of weights
        ("compiled_mlp_gpm", "compute_bound"),
        ("compiled_mlp_nogpm", "compute_bound"),  # after an 18 s compile
        # numpy augmentation on the training thread at 100% while the GPU runs 0% of the time: nothing is read,
        # and no sync holds a thread that busy with so little GPU work to wait for (it was called sync_bound)
        ("cpu_augment_gpm", "input_starved"),
        ("cpu_augment_nogpm", "input_starved"),
    ],
)
def test_workloads_written_after_the_rules_get_their_cause_with_and_without_gpm(name, expected):
    # examples/workloads/ under `gputriage run` and `run --no-gpm` on an H200 (2026-12-01)
    from gputriage.diagnosis.run.judge import judge
    from gputriage.model.run import ProfileReport, RunMeta
    from gputriage.sampling.session import replay

    rec = UNSEEN[name]
    profile = msgspec.convert(rec["profile"], ProfileReport) if rec["profile"] else None
    report = judge(
        replay(
            [msgspec.convert(s, Sample) for s in rec["samples"]],
            msgspec.convert(rec["meta"], RunMeta),
            command=rec["command"],
        ),
        rec["exit_code"],
        profile=profile,
    )
    assert report.verdict.per_gpu["0"].bottleneck.value == expected
    assert report.verdict.bottleneck.value == expected  # and the trace, where `--profile auto` asked for one


DDP = json.loads(gzip.decompress((FIXTURES / "runs_typed_2gpu.json.gz").read_bytes()))


def ddp_run(name: str):
    from gputriage.model.run import RunMeta
    from gputriage.sampling.session import replay

    meta = msgspec.convert(DDP[name]["meta"], RunMeta)
    return replay([msgspec.convert(s, Sample) for s in DDP[name]["samples"]], meta)


def test_a_ddp_job_whose_links_are_not_counted_keeps_comm_bound_possible_where_the_tensor_cores_rest():
    # two H200s recorded before NVLink was sampled: while the all-reduce dominates the SMs are half busy and the
    # tensor pipes at 2%; the counters cannot tell a collective from CUDA-core math, and say so
    from gputriage.diagnosis.run.judge import judge

    for v in judge(ddp_run("ddp_allreduce"), 0).verdict.per_gpu.values():
        assert v.bottleneck == B.compute_bound and v.undecided_between == [B.compute_bound, B.comm_bound]
        assert v.evidence["tensor_active_pct"] < 5 and "not with tensor-core math" in v.decision
    for v in judge(ddp_run("ddp_allreduce_fixed"), 0).verdict.per_gpu.values():  # tensor pipes at 70%
        assert v.bottleneck == B.compute_bound and v.undecided_between == []
        assert v.decision.startswith("Healthy: the GPU computes on its tensor cores")


@pytest.mark.parametrize(
    "links, job_gpus, possible",
    [
        (None, 2.0, [B.comm_bound]),  # links not counted, the job on two GPUs: a collective may be what runs
        (None, 1.0, []),  # one GPU: no collective to miss
        (18, 2.0, []),  # links counted and quiet: the collectives are not what the GPU does
    ],
)
def test_a_collective_is_possible_only_on_a_job_on_several_gpus_whose_links_are_not_counted(links, job_gpus, possible):
    from gputriage.diagnosis.run.classify import label
    from gputriage.model.run import GpuStatic

    static = GpuStatic(nvlink_links=links, nvlink_link_mb_per_s=26_562.0 if links else None, power_limit_mw=700_000)
    ws = list(ddp_run("ddp_allreduce").windows.series[0])
    w = msgspec.structs.replace(
        ws[len(ws) // 2],
        job_gpus=job_gpus,  # a window while the all-reduce dominated
        nvlink_tx_mib_per_s=0.0 if links else None,
        nvlink_rx_mib_per_s=0.0 if links else None,
    )
    assert w.tensor_active_pct < 5 and 50 <= w.sm_active_pct < 60
    assert label(w, static) == (B.compute_bound, possible)
    busy = msgspec.structs.replace(w, tensor_active_pct=70.0)  # tensor cores at work: no collective in question,
    assert label(busy, static) == (B.compute_bound, [B.underfilled])  # but SMs busy half the time GPU-Util says
    assert label(msgspec.structs.replace(w, sm_active_pct=30.0), static) == (B.underfilled, possible)  # NCCL alone
