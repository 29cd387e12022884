"""What a trace's verdict is judged on: the profiler's own stalls left out, the allocator's calls counted, copies
against idle causes, a job of several ranks, a cut file, a window too thin to be sure — each on a recorded H200
trace, some edited to hold the case."""

from __future__ import annotations

import bisect
import gzip
import json
from pathlib import Path

import msgspec
import pytest
from rich.console import Console

from gputriage import api
from gputriage.report.trace_terminal import render
from gputriage.trace.load import load
from gputriage.trace.window import profiler_own

TRACES = Path(__file__).parent / "fixtures" / "h200" / "traces"
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def recorded(name: str) -> dict:
    return json.loads(gzip.decompress((TRACES / f"{name}.json.gz").read_bytes()))


def judged(tmp_path: Path, data: dict, name: str = "edited.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return api.analyze_trace([path])


def terminal(report) -> str:
    console = Console(record=True, width=200)
    render(report, console)
    return console.export_text()


def with_stalls(data: dict, stalls: int, stall_us: float, marked: bool) -> dict:
    """The workload held `stalls` times for `stall_us` between two GPU activities, everything after each moment
    later by as much: as CUPTI's buffer requests hold it. `marked`: with Kineto's overhead event for each."""
    events = data["traceEvents"]
    gpu = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") in GPU_CATS)
    gaps = [(end + start) / 2 for (_, end), (start, _) in zip(gpu, gpu[1:]) if start > end]
    for t in sorted((gaps[k * len(gaps) // stalls] for k in range(stalls)), reverse=True):
        for e in events:
            ts = e.get("ts")
            if not isinstance(ts, (int, float)):
                continue
            if ts >= t:
                e["ts"] = ts + stall_us
            elif e.get("ph") == "X" and ts + e.get("dur", 0) > t:
                e["dur"] += stall_us
        if marked:
            events.append(
                {
                    "ph": "X",
                    "cat": "overhead",
                    "name": "Activity Buffer Request",
                    "pid": -1,
                    "tid": 0,
                    "ts": t,
                    "dur": stall_us,
                }
            )
    return data


def test_the_profilers_buffer_requests_are_left_out_of_the_window(tmp_path):
    # the recorded compute-bound loop held 10 times for 2.5 ms, as CUPTI holds a thread while it hands over a full
    # buffer: unmarked, the holds read as a quarter of the window idle behind the host; marked as Kineto marks them,
    # they are the profiler's time
    plain = judged(tmp_path, with_stalls(recorded("healthy"), 10, 2500.0, marked=False))
    assert plain.verdict.bottleneck.value != "compute_bound" and plain.verdict.gpu_idle_pct >= 25
    marked = judged(tmp_path, with_stalls(recorded("healthy"), 10, 2500.0, marked=True))
    whole = api.analyze_trace([TRACES / "healthy.json.gz"])
    a, w = marked.ranks[0].main(), whole.ranks[0].main()
    assert marked.verdict.bottleneck.value == "compute_bound"
    assert a.profiler_skipped_us == pytest.approx(25_000, abs=1) and a.window_us == pytest.approx(w.window_us, abs=1)
    assert any("buffer requests" in p for p in marked.ranks[0].problems)
    # the small-batch loop: its host-side shares stay what they were
    small = judged(tmp_path, with_stalls(recorded("small_batch"), 10, 2500.0, marked=True))
    recorded_small = api.analyze_trace([TRACES / "small_batch.json.gz"])
    assert small.verdict.bottleneck == recorded_small.verdict.bottleneck
    assert small.ranks[0].main().idle_of("host_outside_ops") == pytest.approx(
        recorded_small.ranks[0].main().idle_of("host_outside_ops"), rel=0.05
    )


def test_lazy_loading_and_a_full_launch_queue_stay_the_workloads():
    # recorded traces hold "Lazy Function Loading" and "Command Buffer Full": CUDA's and the workload's own
    cols = load(TRACES / "run_profile_contended_fixed.json.gz")
    names = {name for name, _, _ in cols.overheads}
    assert {"Command Buffer Full", "Activity Buffer Request"} <= names
    own = profiler_own(cols)
    assert len(own) == 1  # the one buffer request, not the 298 full queues


def _frees_after_the_gpu_drained(data: dict) -> int:
    """Each cudaFree that waited for the GPU to drain starts once it had drained instead: the host reached
    empty_cache() after a synchronization, as a loop that reads its loss does. How many were moved."""
    gpu = sorted((e["ts"], e["ts"] + e["dur"]) for e in data["traceEvents"] if e.get("cat") in GPU_CATS)
    ends = [b for _, b in gpu]
    moved = 0
    for e in data["traceEvents"]:
        if e.get("name") != "cudaFree":
            continue
        s, t = e["ts"], e["ts"] + e["dur"]
        j = bisect.bisect_right(ends, t) - 1
        if j >= 0 and s < ends[j] < t and not any(a < t for a, _ in gpu[j + 1 : j + 2]):
            e["ts"], e["dur"] = ends[j] + 5.0, t - ends[j] - 5.0
            moved += 1
    return moved


def test_an_allocator_that_frees_and_allocates_every_step_is_vram_pressure(tmp_path):
    # recorded under `run --profile` on the H200: the caching allocator gives memory back and takes it again each
    # iteration; the cudaMalloc calls inside framework ops read as host computation before they counted
    rep = api.analyze_trace([TRACES / "run_profile_vram_churn.json.gz"])
    a = rep.ranks[0].main()
    assert rep.verdict.bottleneck.value == "vram_pressure" and a.idle_of("allocator") > 0.6 * a.window_us
    assert a.idle_of("host_in_ops") < 0.05 * a.window_us
    assert a.allocator_calls["cudaMalloc"] > 600 and a.allocator_calls["cudaFree"] > 600
    # the same trace with its frees made after the GPU drained (empty_cache() after a sync): no free returns as
    # a gap begins, and the time in the calls is still the allocator's
    data = recorded("run_profile_vram_churn")
    assert _frees_after_the_gpu_drained(data) > 300
    rep = judged(tmp_path, data)
    a = rep.ranks[0].main()
    assert rep.verdict.bottleneck.value == "vram_pressure", {k: v.pct for k, v in a.idle.items()}
    assert a.idle_of("allocator") > a.idle_of("host_in_ops") + a.idle_of("host_outside_ops")
    assert "caching allocator:" in terminal(rep) and "cudaMalloc" in terminal(rep)


def test_copies_that_take_more_of_the_window_than_any_idle_cause_win():
    # an optimizer offloaded to the host (AdamW on CPU copies of the parameters), under `run --profile`: gradients
    # copied to the host and parameters back take 68% of the window, the CPU's AdamW 28%
    rep = api.analyze_trace([TRACES / "run_profile_cpu_optimizer.json.gz"])
    v, a = rep.verdict, rep.ranks[0].main()
    idle_top = max(x.pct for k, x in a.idle.items())
    assert v.bottleneck.value == "h2d_copy_bound" and v.share_pct > idle_top > 25
    ids = [f.id for f in rep.findings]
    assert ids[0] == "trace.h2d_copy_bound" and "trace.host_bound" in ids  # the CPU steps still a finding


NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def _rank(data: dict, rank: int, comm_share: float) -> dict:
    """The recorded compute-bound loop as one rank of a job: its first kernels turned into all-reduces that no
    computation overlaps, for `comm_share` of them."""
    data = json.loads(json.dumps(data))
    data["distributedInfo"] = {"rank": rank, "world_size": 2}
    kernels = [e for e in data["traceEvents"] if e.get("cat") == "kernel"]
    for k in kernels[: int(comm_share * len(kernels))]:
        k["name"] = NCCL
        k["args"].update({"blocks per SM": 0.06, "grid": [8, 1, 1], "block": [640, 1, 1]})
    return data


def test_a_job_of_two_ranks_is_judged_from_their_averaged_shares(tmp_path):
    base = recorded("healthy")
    paths = []
    for rank, share in ((0, 0.35), (1, 0.8)):  # rank 0 mostly computes; rank 1 mostly waits in collectives
        paths.append(tmp_path / f"rank{rank}.json")
        paths[-1].write_text(json.dumps(_rank(base, rank, share)))
    rep = api.analyze_trace(paths)
    own = [r.verdict.bottleneck.value for r in rep.ranks]
    assert own == ["compute_bound", "comm_bound"]
    v = rep.verdict
    assert v.bottleneck.value == "comm_bound" and "averaged" in v.basis
    assert v.ranks == 2 and v.ranks_agreeing == 1 and v.device is None
    comm = [
        r.ranks[0].main().busy_of("communication") / r.ranks[0].main().window_us
        for r in (api.analyze_trace([p]) for p in paths)
    ]
    assert v.shares_pct["comm_bound"] == pytest.approx(100 * sum(comm) / 2, abs=1.0)
    assert "trace.ranks_disagree" in {f.id for f in rep.findings}
    assert "averaged" in terminal(rep)


@pytest.mark.parametrize(
    "name, fraction, judged",
    [
        # judged on part of their kernels before (160, 272 and 70 kernels of the window missing)
        ("trace_starved", 0.8, False),
        ("run_profile_cpu_optimizer", 0.85, False),
        ("loader_pin_thread", 0.7, False),
        ("trace_starved", 0.9, True),
        ("run_profile_cpu_optimizer", 0.95, True),
        ("loader_pin_thread", 0.9, True),
        ("item_sync", 0.9, True),
    ],
)
def test_a_cut_file_is_judged_only_where_every_gpu_activity_was_read(tmp_path, name, fraction, judged):
    # Kineto writes each launching thread's runtime calls and GPU activities in its own buffers, in no time
    # order: a cut keeps the forward thread's buffer and loses autograd's, whose kernels lie all through the window
    raw = gzip.decompress((TRACES / f"{name}.json.gz").read_bytes())
    path = tmp_path / "cut.json"
    path.write_bytes(raw[: int(len(raw) * fraction)])
    rep = api.analyze_trace([path])
    whole, cut = load(TRACES / f"{name}.json.gz"), load(path)
    assert cut.truncated and len(cut.g_ts) < len(whole.g_ts)
    problems = rep.ranks[0].problems
    if not judged:  # no span holds both records whole: nothing to judge, and it says so
        assert rep.verdict.bottleneck is None and any("nothing to judge" in p for p in problems)
        return
    a = rep.ranks[0].main()
    in_span = [
        (t, d)
        for t, d, dev in zip(whole.g_ts, whole.g_dur, whole.g_dev)
        if dev == a.device and a.start_us <= t < a.end_us
    ]
    read = set(zip(cut.g_ts, cut.g_dur))
    assert in_span and all(x in read for x in in_span)  # nothing of the judged span is missing
    assert rep.verdict.bottleneck is not None and a.kernels == sum(
        1
        for t, k, dev in zip(whole.g_ts, whole.g_kind, whole.g_dev)
        if k == 0 and dev == a.device and a.start_us <= t < a.end_us
    )
    note = next(p for p in problems if "record are whole" in p)
    assert "GPU activities read lie beyond it and are left out" in note


def test_a_verdict_from_a_single_kernel_is_worded_as_a_guess(tmp_path):
    # the recorded compute-bound loop cut to its first kernel: one GEMM of 1.4 ms
    data = recorded("healthy")
    first = min(e["ts"] for e in data["traceEvents"] if e.get("cat") == "kernel")
    data["traceEvents"] = [e for e in data["traceEvents"] if e.get("ph") != "X" or e["ts"] <= first]
    rep = judged(tmp_path, data)
    v = rep.verdict
    assert rep.ranks[0].main().kernels == 1 and v.confidence <= 0.05 and v.tentative
    out = terminal(rep)
    assert "too little GPU work to judge: 1 kernel" in out and "a guess" in out
    assert msgspec.to_builtins(rep)["verdict"]["tentative"] is True
    # recorded on the H200 (vram_churn.py's loop, 3 ms profiled): 10 elementwise kernels, confidence 0.1; the
    # verdict's finding says it is a guess
    churn = api.analyze_trace([TRACES / "vram_churn.json.gz"])
    lead = next(f for f in churn.findings if f.id == f"trace.{churn.verdict.bottleneck.value}")
    assert churn.verdict.tentative and "tentative: a thin window: 10 kernels" in lead.symptom
    # a sure verdict reads as before
    sure = api.analyze_trace([TRACES / "healthy.json.gz"])
    assert not sure.verdict.tentative and "tentative" not in terminal(sure) and "guess" not in terminal(sure)
    # recorded on the H200: a window of 6 kernels, confidence 0.3
    short = api.analyze_trace([TRACES / "too_short_window.json.gz"])
    assert short.verdict.tentative and "too little GPU work to judge: 6 kernels" in terminal(short)
