"""`gputriage trace` on real H200 traces (each with its verdict), generated CPU traces, bad input."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from gputriage import api
from gputriage.api import GputriageError
from gputriage.trace.load import load

TRACES = Path(__file__).parent / "fixtures" / "h200" / "traces"
GT = [sys.executable, "-m", "gputriage"]

EXPECTED = {
    "trace_starved": "input_starved",
    "input_starved": "input_starved",
    "pageable_copy": "h2d_copy_bound",
    "pageable_copy_fixed": "h2d_copy_bound",
    "launch_bound": "launch_bound",
    "launch_bound_fixed": "underfilled",  # the CUDA graph removed the gaps; batch-1 kernels fill few SMs
    "item_sync": "launch_bound",  # tiny fp32 layers: launches cost more than the per-layer .item() syncs
    "fp32_no_tensor_cores": "tensor_cores_idle",
    "unfused_elementwise": "memory_bound",
    "healthy": "compute_bound",
    "small_batch": "launch_bound",
    "contended": "compute_bound",  # another process is invisible to a trace; the sampler names it
    # written by `gputriage run --profile` around the pathology scripts (no ProfilerStep markers)
    "run_profile_item_sync": "sync_bound",
    "run_profile_input_starved_fixed": "memory_bound",  # fed by workers: AdamW's elementwise kernels lead
    "run_profile_pageable_copy": "h2d_copy_bound",
    "run_profile_vram_churn": "vram_pressure",
    "run_profile_fp32_no_tensor_cores": "tensor_cores_idle",
    "run_profile_contended": "compute_bound",  # its GEMMs run at half speed: see the test below
    "run_profile_contended_fixed": "compute_bound",
    "run_profile_unfused_elementwise_fixed": "memory_bound",  # one fused kernel; its first 512 ms queued
    "run_profile_host_stats": "host_bound",  # numpy percentiles of an activation read back every step
    # AdamW on CPU copies of the parameters: its copies (68% of the window) outweigh the CPU steps (28%)
    "run_profile_cpu_optimizer": "h2d_copy_bound",
    "fp64_solver": "compute_bound",  # fp64 GEMMs of 8192x8192 on the fp64 tensor cores (`run --no-gpm --keep-trace`)
    "pin_every_step": "h2d_copy_bound",  # pinned batches copied on the compute stream: 47.5% of the window, no overlap
    "int8_gemm": "compute_bound",  # torch._int_mm of 8192x8192 int8 (`run --no-gpm --keep-trace`): was memory_bound
}


def analyze(paths):
    """The report as its JSON document reads, and its findings."""
    r = api.analyze_trace(paths)
    return msgspec.to_builtins(r), r.findings


def report(name: str):
    return analyze([TRACES / f"{name}.json.gz"])


@pytest.mark.parametrize("name, expected", sorted(EXPECTED.items()))
def test_recorded_h200_traces_get_their_verdict(name, expected):
    rep, findings = report(name)
    assert rep["verdict"]["bottleneck"] == expected
    anatomy = rep["ranks"][0]["anatomy"][0]
    total = sum(v["us"] for v in anatomy["busy"].values()) + sum(v["us"] for v in anatomy["idle"].values())
    assert abs(total - anatomy["window_us"]) < 0.01 * anatomy["window_us"]  # the anatomy adds up


def test_syncs_are_counted_and_attributed_to_the_op_that_made_them():
    rep, findings = report("item_sync")
    syncs = rep["ranks"][0]["anatomy"][0]["syncs"]
    assert syncs["by_op"][0]["op"] == "aten::item" and syncs["by_op"][0]["calls"] == 90
    assert "trace.sync_bound" in {f.id for f in findings}
    rep, _ = report("trace_starved")
    assert rep["ranks"][0]["anatomy"][0]["syncs"]["by_op"][0]["op"] == "aten::to"


def test_pageable_copies_warn_and_pinned_ones_do_not():
    _, f = report("pageable_copy")
    assert {x.id: x.severity.value for x in f}["trace.h2d_copy_bound"] == "warn"
    _, f = report("pageable_copy_fixed")
    assert {x.id: x.severity.value for x in f}["trace.h2d_copy_bound"] == "info"


def test_kernel_table_knows_tensor_cores_and_roofs():
    rep, _ = report("fp32_no_tensor_cores")
    top = rep["ranks"][0]["kernels"][0]
    assert top["kind"] == "gemm_other" and top["tensor_cores"] is False
    assert 30 < top["achieved_tflops"] < 67  # fp32 on CUDA cores: under the 67 TFLOP/s datasheet rate
    rep, _ = report("healthy")
    top = rep["ranks"][0]["kernels"][0]
    assert top["tensor_cores"] and 500 < top["achieved_tflops"] < 990 and top["roof"] == "compute"
    rep, f = report("unfused_elementwise")
    rows = [k for k in rep["ranks"][0]["kernels"] if k.get("achieved_gbs")]
    assert rows and all(k["roof"] == "memory" for k in rows)
    # unary ops read one tensor and write one: their estimate is exact, and near the 4.8 TB/s of HBM3e
    assert sum(1 for k in rows if 3500 < k["achieved_gbs"] < 4800) >= 3
    assert {x.id: x.severity.value for x in f}["trace.memory_bound"] == "warn"


def test_cuda_graph_launches_are_handled():
    rep, _ = report("launch_bound_fixed")
    a = rep["ranks"][0]["anatomy"][0]
    assert a["kernels"] > 1000 and a["busy_pct"] > 85


def test_compact_json_gives_the_same_answer_as_the_streamed_kineto_layout(tmp_path):
    data = json.loads(gzip.decompress((TRACES / "pageable_copy.json.gz").read_bytes()))
    compact = tmp_path / "compact.json"
    compact.write_text(json.dumps(data, separators=(",", ":")))
    a, _ = analyze([compact])
    b, _ = report("pageable_copy")
    assert a["verdict"] == b["verdict"]


def test_truncated_trace_is_a_partial_analysis_that_says_so(tmp_path):
    raw = gzip.decompress((TRACES / "launch_bound.json.gz").read_bytes())
    cut = tmp_path / "cut.json"
    cut.write_bytes(raw[: len(raw) // 2])
    rep, _ = analyze([cut])
    problems = rep["ranks"][0]["problems"]
    assert any("truncated" in p for p in problems)
    # Kineto writes host events before device events: half a file has no GPU activity left, and says so
    assert rep["ranks"][0]["events"] > 1000
    assert rep["verdict"]["bottleneck"] is None and any("no GPU activity" in p for p in problems)
    raw_cut = raw[: int(len(raw) * 0.97)]
    cut.write_bytes(raw_cut)
    rep, _ = analyze([cut])
    assert rep["verdict"]["bottleneck"] == "launch_bound" and any("truncated" in p for p in rep["ranks"][0]["problems"])


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "not a JSON object"),
        (b"[1, 2, 3]", "not a JSON object"),
        (b'{"schemaVersion": 1}', "not a PyTorch profiler"),
        (b'{"traceEvents": []}', "no events"),
        (b'{"traceEvents": [\n  {"ph": "X", "cat": "kernel", "name": "k", "ts": "soon"}]}', "not a Kineto"),
        (b'{"traceEvents": [\n  {"ph": "X", "cat": "kernel", ,]}', "corrupt"),
        (b"\x00\x01\x02garbage", "not a JSON object"),
    ],
)
def test_bad_files_are_clear_errors(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(GputriageError, match=message):
        analyze([path])
    r = subprocess.run(GT + ["trace", str(path)], capture_output=True, text=True)
    assert r.returncode == 3 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_missing_file_and_directory(tmp_path):
    for target in (tmp_path / "nope.json", tmp_path):
        r = subprocess.run(GT + ["trace", str(target)], capture_output=True, text=True)
        assert r.returncode == 3 and "Traceback" not in r.stderr


def test_trace_json_has_a_verdict_key():
    r = subprocess.run(GT + ["trace", str(TRACES / "healthy.json.gz"), "--json"], capture_output=True, text=True)
    out = json.loads(r.stdout)
    assert out["verdict"]["bottleneck"] == "compute_bound" and out["schema"] == "gputriage.trace"


def test_two_ranks_give_a_cross_rank_view(tmp_path):
    data = json.loads(gzip.decompress((TRACES / "healthy.json.gz").read_bytes()))
    paths = []
    for rank in (0, 1):
        data["distributedInfo"] = {"rank": rank, "world_size": 2}
        p = tmp_path / f"rank{rank}.json"
        p.write_text(json.dumps(data, indent=2))
        paths.append(p)
    rep, _ = analyze(paths)
    assert [r["rank"] for r in rep["multi_rank"]["per_rank"]] == [0, 1]
    assert rep["multi_rank"]["stragglers"] == []


def test_a_cpu_only_trace_recorded_here_parses_and_says_what_is_missing(tmp_path):
    torch = pytest.importorskip("torch")
    out = tmp_path / "cpu.json"
    m = torch.nn.Linear(64, 64)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(5):
            m(torch.randn(32, 64)).sum().backward()
            prof.step()
    prof.export_chrome_trace(str(out))
    cols = load(out)
    assert len(cols.o_ts) > 10 and len(cols.g_ts) == 0
    rep, findings = analyze([out])
    assert rep["verdict"]["bottleneck"] is None and findings == []
    assert any("no GPU activity" in p for p in rep["ranks"][0]["problems"])
    flops = [cols.cost(i)[0] for i, n in enumerate(cols.o_name) if cols.names[n] == "aten::addmm"]
    assert flops and flops[0] == 2 * 32 * 64 * 64


def test_large_gemms_far_under_the_datasheet_point_at_a_shared_or_throttled_gpu():
    _, found = report("contended")  # another process time-sliced the GPU: 300 of 989 TFLOP/s
    slow = [f for f in found if f.id == "trace.slow_gemms"]
    assert slow and slow[0].evidence["achieved_tflops"] < 0.5 * slow[0].evidence["datasheet_tflops"]
    _, found = report("healthy")  # 748 TFLOP/s: healthy
    assert not [f for f in found if f.id == "trace.slow_gemms"]


def test_a_window_with_a_handful_of_kernels_gets_a_verdict_that_says_how_sure_it_is():
    # recorded on the H200: `run --profile` started the profiler just before the workload ended
    rep, findings = report("too_short_window")
    assert rep["ranks"][0]["anatomy"][0]["kernels"] == 6
    assert rep["verdict"]["bottleneck"] is not None and rep["verdict"]["confidence"] < 0.5  # unsure: says so
    assert any("little GPU activity to judge from" in p for p in rep["ranks"][0]["problems"])


def test_one_or_two_iterations_are_judged_by_what_the_gpu_did():
    # the recorded pageable-copy loop cut to its first steps: copies from pageable memory fill the window
    data = json.loads(gzip.decompress((TRACES / "pageable_copy.json.gz").read_bytes()))
    gpu = sorted(e["ts"] for e in data["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy"))
    cut = gpu[0] + 0.08 * (gpu[-1] - gpu[0])
    data["traceEvents"] = [e for e in data["traceEvents"] if e.get("ph") != "X" or e.get("ts", 0) <= cut]
    path = TRACES.parent.parent.parent / "short_pageable.json"
    try:
        path.write_text(json.dumps(data))
        rep, findings = analyze([path])
    finally:
        path.unlink()
    v = rep["verdict"]
    assert v["bottleneck"] == "h2d_copy_bound" and 0 < v["confidence"] <= 1
    assert "trace.h2d_copy_bound" in {f.id for f in findings}


@pytest.mark.parametrize(
    "name, fraction", [("item_sync", 0.8), ("run_profile_item_sync", 0.9), ("launch_bound", 0.8), ("healthy", 0.7)]
)
def test_a_cut_file_is_judged_only_where_its_record_is_whole(tmp_path, name, fraction):
    # Kineto writes the host's ops first and the GPU's activities in blocks: a cut loses activities from
    # anywhere in the window, and the holes must not read as the GPU idling behind the host
    raw = gzip.decompress((TRACES / f"{name}.json.gz").read_bytes())
    path = tmp_path / "cut.json"
    path.write_bytes(raw[: int(len(raw) * fraction)])
    rep, _ = analyze([path])
    whole, _ = report(name)
    rank = rep["ranks"][0]
    assert rank["truncated"] and any("record are whole" in p for p in rank["problems"])
    assert rank["anatomy"][0]["window_us"] < whole["ranks"][0]["anatomy"][0]["window_us"]
    v = rep["verdict"]
    if v["bottleneck"] is not None:
        assert v["confidence"] <= 0.5 * whole["verdict"]["confidence"] + 0.01  # partial: never as sure


def test_a_first_profiled_step_slowed_by_profiler_warm_up_is_left_out():
    rep, _ = report("run_profile_item_sync")
    rank = rep["ranks"][0]
    assert 200_000 < rank["anatomy"][0]["warmup_skipped_us"] < 300_000  # the first step: ~260 ms
    assert any("left out: profiler warm-up" in p for p in rank["problems"])
    # the nine later steps (~9 ms each) are the window
    assert 80_000 < rank["anatomy"][0]["window_us"] < 100_000
    for name in ("run_profile_pageable_copy", "healthy", "launch_bound"):  # no outlier first step, or step markers
        assert report(name)[0]["ranks"][0]["anatomy"][0]["warmup_skipped_us"] == 0


def test_a_gpu_shared_with_another_job_shows_in_the_trace_as_slow_gemms():
    # the same bf16 GEMM loop under `run --profile` on the H200, with a neighbour's GEMMs time-sliced
    # in, then alone: the trace cannot see the neighbour, but its GEMMs reach half their rate
    shared, shared_findings = report("run_profile_contended")
    alone, alone_findings = report("run_profile_contended_fixed")
    tflops = [r["ranks"][0]["kernels"][0]["achieved_tflops"] for r in (shared, alone)]
    assert tflops[0] < 0.6 * tflops[1]
    assert "trace.slow_gemms" in {f.id for f in shared_findings}
    assert "trace.slow_gemms" not in {f.id for f in alone_findings}


@pytest.mark.parametrize("blocks_per_sm, underfilled", [(0.06, True), (0.45, True), (0.97, False), (2.0, False)])
def test_underfilled_means_most_sms_without_a_block(tmp_path, blocks_per_sm, underfilled):
    # the CUDA-graph trace of batch-1 kernels (0.06 blocks per SM), its grids re-sized: 128 blocks on 132
    # SMs (0.97) leave 4 SMs idle, which is no underfilled GPU
    data = json.loads(gzip.decompress((TRACES / "launch_bound_fixed.json.gz").read_bytes()))
    for e in data["traceEvents"]:
        if e.get("cat") == "kernel" and "blocks per SM" in e.get("args", {}):
            e["args"]["blocks per SM"] = blocks_per_sm
    path = tmp_path / "resized.json"
    path.write_text(json.dumps(data))
    rep, findings = analyze([path])
    assert (rep["verdict"]["bottleneck"] == "underfilled") is underfilled
    assert ("trace.underfilled" in {f.id for f in findings}) is underfilled


def test_kernels_queued_before_the_profiler_started_are_not_idle_time():
    # torch.compile'd chain: the host ran 1,000 launches (512 ms of GPU work) ahead of the GPU; the profiler
    # started (instantly: CUPTI already up) without draining the queue, so the first recorded kernel began
    # 512 ms after its launch, while the GPU ran the unrecorded earlier ones
    rep, findings = report("run_profile_unfused_elementwise_fixed")
    a = rep["ranks"][0]["anatomy"][0]
    assert a["queued_skipped_us"] > 500_000 and a["busy_pct"] > 99
    assert any("queued before the profiler started" in p for p in rep["ranks"][0]["problems"])
    assert not {f.id for f in findings} & {"trace.input_starved", "trace.launch_bound", "trace.sync_bound"}


def test_syncs_in_a_launch_bound_loop_are_removed_before_any_cuda_graph():
    _, found = report("item_sync")  # tiny fp32 layers and an .item() per layer, recorded on the H200
    launch = next(f for f in found if f.id == "trace.launch_bound")
    assert launch.decision.startswith("First remove the host synchronizations") and "aten::item ×90" in launch.decision
    _, clean = report("launch_bound")  # the same kind of loop without syncs: CUDA graphs first
    assert next(f for f in clean if f.id == "trace.launch_bound").decision.startswith("Launch fewer, bigger kernels")


def test_matrix_kernels_under_the_memory_roof_are_memory_bound_work_whatever_their_name():
    # the recorded small-batch loop: its tensor-core GEMMs run at 7.7 FLOP per byte against the H200's
    # ridge of 206: they stream their weights, so their time is memory-bound work, not compute
    rep, _ = report("small_batch")
    gemm = next(k for k in rep["ranks"][0]["kernels"] if k["kind"] == "gemm_tensor_core")
    assert gemm["roof"] == "memory" and gemm["flop_per_byte"] < gemm["ridge_flop_per_byte"]
    shares = rep["verdict"]["shares_pct"]
    assert shares.get("memory_bound", 0) > 0 and "compute_bound" not in shares
    healthy, _ = report("healthy")  # large GEMMs stay compute-bound
    assert healthy["verdict"]["bottleneck"] == "compute_bound"


NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def _with_collectives(tmp_path, edit) -> Path:
    """The recorded compute-bound H200 trace with NCCL all-reduce kernels put in by `edit(kernels, events)`."""
    data = json.loads(gzip.decompress((TRACES / "healthy.json.gz").read_bytes()))
    kernels = [e for e in data["traceEvents"] if e.get("cat") == "kernel"]
    edit(kernels, data["traceEvents"])
    path = tmp_path / "ddp.json"
    path.write_text(json.dumps(data))
    return path


def test_collectives_that_dominate_unoverlapped_are_comm_bound_not_underfilled(tmp_path):
    def serialize(kernels, _events):  # most of the GEMMs' time becomes all-reduce time, on NCCL's few blocks
        for k in kernels[: int(0.8 * len(kernels))]:
            k["name"] = NCCL
            k["args"].update({"blocks per SM": 0.06, "grid": [8, 1, 1], "block": [640, 1, 1]})

    rep, found = analyze([_with_collectives(tmp_path, serialize)])
    assert rep["verdict"]["bottleneck"] == "comm_bound"
    ids = {f.id for f in found}
    assert "trace.comm_bound" in ids and "trace.underfilled" not in ids
    comm = next(f for f in found if f.id == "trace.comm_bound")
    assert comm.evidence["exposed_comm_pct"] > 50 and comm.evidence["comm_overlapped_pct"] == 0


def test_collectives_hidden_behind_computation_cost_nothing(tmp_path):
    def overlap(kernels, events):  # DDP's bucketed all-reduce on its own stream, under the backward GEMMs
        for n, k in enumerate(kernels):  # each starts 1 µs before the GEMM it hides behind
            events.append(
                {
                    **k,
                    "name": NCCL,
                    "tid": 20,
                    "ts": k["ts"] - 1.0,
                    "dur": 0.8 * k["dur"],
                    "args": {**k["args"], "stream": 20, "correlation": 10_000_000 + n, "blocks per SM": 0.06},
                }
            )

    rep, found = analyze([_with_collectives(tmp_path, overlap)])
    assert rep["verdict"]["bottleneck"] == "compute_bound"
    assert rep["ranks"][0]["overlap"]["overlapped_pct"] > 99
    assert "trace.comm_bound" not in {f.id for f in found}
    anatomy = rep["ranks"][0]["anatomy"][0]
    assert anatomy["busy"]["communication"]["us"] < 0.01 * anatomy["window_us"]  # the 1 µs heads only


def test_the_profiler_starting_is_not_workload_idle(tmp_path):
    # a `run --profile` window on the H200 (no step markers): its first CUDA call came 2.7 ms after its first
    # host event, CUPTI attaching. Cut to its first 12 ms, that start-up would be a quarter of the window
    data = json.loads(gzip.decompress((TRACES / "run_profile_contended_fixed.json.gz").read_bytes()))
    host = [e["ts"] for e in data["traceEvents"] if e.get("cat") in ("cpu_op", "cuda_runtime", "cuda_driver")]
    first_call = min(e["ts"] for e in data["traceEvents"] if e.get("cat") in ("cuda_runtime", "cuda_driver"))
    data["traceEvents"] = [
        e for e in data["traceEvents"] if e.get("ph") != "X" or e["ts"] + e.get("dur", 0) < min(host) + 12_000
    ]
    path = tmp_path / "first_12ms.json"
    path.write_text(json.dumps(data))
    rep, found = analyze([path])
    a = rep["ranks"][0]["anatomy"][0]
    assert a["startup_skipped_us"] == pytest.approx(first_call - min(host), abs=0.2)
    assert any("the profiler starting" in p for p in rep["ranks"][0]["problems"])
    assert rep["verdict"]["bottleneck"] == "compute_bound" and rep["verdict"]["gpu_idle_pct"] < 5
    assert "trace.input_starved" not in {f.id for f in found}


def test_the_host_computing_is_named_with_the_ops_that_take_the_time():
    # recorded by `run --profile` on the H200 (2026-12-01); both were input_starved, with DataLoader advice
    rep, findings = report("run_profile_host_stats")
    a = rep["ranks"][0]["anatomy"][0]
    assert a["idle"]["host_after_read"]["pct"] > 80 and "host_outside_ops" not in a["idle"]
    assert a["host_work"][0]["op"] == "aten::to" and a["host_work"][0]["where"] == "after_read"
    f = next(f for f in findings if f.id == "trace.host_bound")
    assert "DataLoader" not in f.decision and "aten::to" in f.cause
    assert not any(f.id == "trace.input_starved" for f in findings)

    rep, findings = report("run_profile_cpu_optimizer")
    a = rep["ranks"][0]["anatomy"][0]
    top = a["host_work"][0]
    assert top["op"] == "Optimizer.step#AdamW.step" and top["where"] == "in_ops"
    assert top["gpu_idle_us"] > 0.8 * a["idle"]["host_in_ops"]["us"]
    f = next(f for f in findings if f.id == "trace.host_bound")
    assert f.evidence["host_in_ops_pct"] >= 25 and "Optimizer.step#AdamW.step" in f.cause


def test_a_loop_that_sleeps_before_its_copies_stays_input_starved():
    # host time outside ops that follows no read back is input (or the loop's own waiting), not computation
    rep, _ = report("trace_starved")
    a = rep["ranks"][0]["anatomy"][0]
    assert a["idle"]["host_outside_ops"]["pct"] > 25 and "host_after_read" not in a["idle"]


def test_a_large_trace_s_readers_end_whatever_signal_handlers_their_parent_set(tmp_path):
    # a process that ignores SIGTERM (a command's own handler, a test's) forks the readers: they must still end (a
    # pool ended by terminate() waited forever on a reader that took SIGTERM to its inherited handler)
    path = tmp_path / "cpu_optimizer.json"
    path.write_bytes(gzip.decompress((TRACES / "run_profile_cpu_optimizer.json.gz").read_bytes()))
    script = (
        "import signal, sys\n"
        "signal.signal(signal.SIGTERM, lambda *a: None)\n"
        "signal.signal(signal.SIGHUP, lambda *a: None)\n"
        "from gputriage.trace import load as L, load_parallel as P\n"
        "L.BLOCK_BYTES = P.PROBE_BYTES = 64 * 1024\n"
        "for _ in range(20):  # the old pool's end raced its workers: stuck in one read of a few\n"
        "    cols = P.load(sys.argv[1], P.os.path.getsize(sys.argv[1]), 3)\n"
        "    assert cols is not None and cols.workers == 3, cols\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_large_trace_read_on_several_cores_gives_the_columns_of_one_stream(tmp_path, monkeypatch):
    # a 3.2 MB H200 trace read by 3 workers (a large file's ranges, scaled down) against the single stream
    import gzip as gz

    from gputriage.trace import load as L
    from gputriage.trace import load_parallel as P

    path = tmp_path / "cpu_optimizer.json"
    path.write_bytes(gz.decompress((TRACES / "run_profile_cpu_optimizer.json.gz").read_bytes()))
    monkeypatch.setattr(L, "BLOCK_BYTES", 256 * 1024)  # several blocks per range
    monkeypatch.setattr(P, "PROBE_BYTES", 64 * 1024)
    parallel = P.load(path, path.stat().st_size, 3)
    assert parallel is not None and parallel.workers == 3 and parallel.workers_memory_bytes > 0
    serial = L.load(path)

    def named(c):
        return {
            k: [c.names[i] for i in v]
            if k in P.NAME_COLUMNS
            else [c.shapes[i] for i in v]
            if k == "o_shape"
            else list(v)
            for k, v in vars(c).items()
            if k[:2] in ("g_", "r_", "o_")
        }

    assert named(parallel) == named(serial)
    assert (parallel.events, parallel.steps, parallel.optimizer_steps, parallel.skipped_kinds) == (
        serial.events,
        serial.steps,
        serial.optimizer_steps,
        serial.skipped_kinds,
    )
    assert parallel.header.deviceProperties == serial.header.deviceProperties
    # a cut file is for the single stream, which salvages what it can
    cut = tmp_path / "cut.json"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size * 2 // 3])
    assert P.load(cut, cut.stat().st_size, 3) is None
    gzipped = tmp_path / "t.json.gz"
    gzipped.write_bytes(gz.compress(path.read_bytes(), 1))
    assert P.load(gzipped, gzipped.stat().st_size, 3) is None


def test_top_level_ops_are_the_same_whether_a_file_lists_ops_in_order_or_not(tmp_path):
    # a recorded H200 trace lists each thread's ops by start (one pass); shuffled, they are sorted first
    import random

    from gputriage.trace.thread_ops import thread_ops

    data = json.loads(gzip.decompress((TRACES / "run_profile_host_stats.json.gz").read_bytes()))
    in_order = thread_ops(load_json(tmp_path / "a.json", data))
    random.Random(7).shuffle(data["traceEvents"])
    shuffled = thread_ops(load_json(tmp_path / "b.json", data))
    assert sum(len(t.starts) for t in in_order.values()) > 100
    assert {k: (t.starts, t.ends) for k, t in in_order.items()} == {k: (t.starts, t.ends) for k, t in shuffled.items()}


def load_json(path: Path, data: dict):
    path.write_text(json.dumps(data))
    return load(path)


def test_fp64_gemms_are_the_precision_asked_for_not_tensor_cores_left_idle():
    # a solver's fp64 GEMMs at 56 TFLOP/s on an H200 (its fp64 tensor cores): called tensor_cores_idle, with the
    # advice to move to bf16, before fp64 was a kind of its own
    from gputriage.trace.kernel_kinds import GEMM_FP64, GEMM_OTHER, kind_of_kernel

    rep, findings = report("fp64_solver")
    kernels = rep["ranks"][0]["kernels"]
    assert kernels[0]["kind"] == GEMM_FP64 and kernels[0]["dtype"] == "double"
    assert kind_of_kernel(kernels[0]["name"]) == GEMM_FP64  # by its name alone: sm90_xmma_gemm_f64f64_...
    assert kind_of_kernel("volta_sgemm_128x64_nn") == GEMM_OTHER  # fp32 on CUDA cores stays what it was
    ids = [f.id for f in findings]
    assert "trace.tensor_cores_idle" not in ids
    fp64 = next(f for f in findings if f.id == "trace.fp64_gemms")
    assert fp64.evidence["gemm_fp64_pct"] > 90 and 40 < fp64.evidence["achieved_tflops"] < 70


def test_int8_gemms_are_costed_and_judged_against_the_int8_rate_and_an_older_kernel_is_named():
    # torch._int_mm on the H200 runs CUTLASS's sm_80 WMMA kernel at 129 TOPS: before the op was costed the trace
    # read 0 TFLOP/s, put the kernel under the memory roof and said memory_bound
    from gputriage.trace.kernel_kinds import kernel_arch

    rep, findings = report("int8_gemm")
    k = rep["ranks"][0]["kernels"][0]
    assert k["dtype"] == "signed char" and k["roof"] == "compute" and 100 < k["achieved_tflops"] < 160
    slow = next(f for f in findings if f.id == "trace.slow_gemms")
    assert slow.evidence["datasheet_tflops"] == 1978.9 and "TOPS" in slow.symptom
    assert slow.evidence["built_for"].startswith("sm_80") and "older GPU generation" in slow.cause
    assert kernel_arch(k["name"]) == 80 and kernel_arch("sm90_xmma_gemm_bf16bf16_bf16f32") == 90
    assert kernel_arch("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN") is None
    _, healthy = report("healthy")  # bf16 GEMMs at full rate: no slow-GEMM finding at all
    assert "trace.slow_gemms" not in [f.id for f in healthy]
