"""input_starved: the GPU waits for its input — DataLoader workers busy while the training process sleeps (the CPU
of the processes holding the GPU apart from their helpers), a loader whose pinned batches cross the link quickly —
on H200 recordings."""

from __future__ import annotations

import msgspec

from gputriage.diagnosis.bottlenecks import INPUT_WORKERS_DECISION
from gputriage.diagnosis.run.classify import COPY_TIME_SHARE, copy_time_share
from gputriage.diagnosis.run.host_side import HOST_READS_BACK, MAIN_THREAD_WAITS, reads_back
from gputriage.diagnosis.run.judge import judge
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.run import RunMeta
from gputriage.model.sample import Sample
from gputriage.sampling.session import replay
from recordings import judged, recorded, runs

HELPERS = runs("runs_helpers.json.gz")
RUNS7 = runs("runs_unseen7.json.gz")
GALLERY = runs("runs_gallery_round6.json.gz")


def test_dataloader_workers_busy_while_the_gpu_waits_are_its_input_not_host_computation():
    # 4 workers augmenting in-memory images: 340% of a core in the workers, 8% in the training process. By the
    # whole tree's CPU it was host computation; by the processes holding the GPU context, the input
    for name in ("workers_augment_gpm", "workers_augment_nogpm"):
        rec = HELPERS[name]
        v = judged(rec).verdict.per_gpu["0"]
        assert v.bottleneck == B.input_starved and v.decision == INPUT_WORKERS_DECISION
        assert v.undecided_between == []  # the training process sleeps (8%): it is not spinning in a sync
        assert v.evidence["workload_cpu_pct"] - v.evidence["gpu_process_cpu_pct"] >= 250
        assert "DataLoader workers" in v.summary and v.evidence["read_mb_per_s"] < 1
        blind = [msgspec.convert(s, Sample) for s in rec["samples"]]  # as a container that hides host pids sees it
        for s in blind:
            if s.workload is not None:
                s.workload.gpu_process_cpu_pct = None
        old = judge(replay(blind, msgspec.convert(rec["meta"], RunMeta)), 0).verdict.per_gpu["0"]
        assert old.bottleneck == B.host_bound
    # the CPU of the process on the GPU itself still says host computation, and idle workers say nothing
    expected = {
        "cpu_optimizer": B.host_bound,
        "host_stats": B.host_bound,
        "gpt_loop": B.compute_bound,
        "input_starved": B.input_starved,
    }
    for name, b in expected.items():
        v = judged(HELPERS[name]).verdict.per_gpu["0"]
        assert v.bottleneck == b and v.decision != INPUT_WORKERS_DECISION, name
    assert judged(HELPERS["cpu_optimizer"]).verdict.per_gpu["0"].evidence["gpu_process_cpu_pct"] >= 250


def test_a_dataloader_whose_pinned_batches_cross_the_link_quickly_is_input_starved_not_copy_bound():
    # live with GPM it read h2d_copy_bound: PCIe RX 2 GB/s with the SMs idle; but pinned batches of 192 MiB cross
    # in 4 ms, 4% of the time, while 4 workers ran on 3.6 cores and the pin-memory thread at 98% beside a main
    # thread at 3% (the trace: copies 3.9% of the window, the host 94%)
    rec = RUNS7["loader_pin_thread"]
    assert rec["verdict"] == "h2d_copy_bound"  # as the report said live
    run = recorded(rec)
    v = judged(rec).verdict.per_gpu["0"]
    e = v.evidence
    assert v.bottleneck == B.input_starved and "DataLoader workers" in v.summary
    assert copy_time_share(e["pcie_rx_mib_per_s"], run.meta.gpus["0"]) < COPY_TIME_SHARE.value
    assert e["gpu_main_thread_pct"] < MAIN_THREAD_WAITS.value <= e["top_thread_pct"]
    # its TX is the copies' own read requests (6% of RX), not data read back
    assert e["pcie_tx_mib_per_s"] >= HOST_READS_BACK.value > reads_back(e["pcie_tx_mib_per_s"], e["pcie_rx_mib_per_s"])
    # a pageable copy loop, whose copies are the time, stays copy-bound
    assert judged(GALLERY["pageable_copy"]).verdict.bottleneck == B.h2d_copy_bound


MODES = runs("runs_host_side_modes.json.gz")


def test_a_service_waiting_for_paced_requests_is_limited_by_its_input_rate_in_every_mode():
    # one request every 25 ms answered by a batch-16 MLP: GPU-Util 0% (kernels too short to count), the main thread
    # blocked on the queue; without the steps and the stacks it read as an idle GPU with a 7 s "shut-down"
    for mode in ("default", "no_profile", "no_gpm"):
        rec = MODES[f"paced_queue_service.{mode}"]
        report = judged(rec)
        v = report.verdict.per_gpu["0"]
        assert v.bottleneck == B.input_starved and v.finding == "run.input_rate_bound", mode
        assert "the input rate is the limit" in v.summary and "headroom" in v.decision, mode
        assert v.shutdown_s < 2.0, mode  # the steady state runs to the last request answered
        assert any(x.file.endswith("paced_queue_service.py") and x.category == "input_wait" for x in v.lines), mode


def test_an_idle_gpu_without_steps_or_stacks_stays_idle():
    # the same windows with the workload's steps and stacks taken away (what `watch` sees): nothing says the
    # process works, so the GPU is idle
    rec = MODES["paced_queue_service.no_profile"]
    stripped = {
        **rec,
        "samples": [
            {**s, "workload": None} if isinstance(s, dict) and s.get("workload") is not None else s
            for s in rec["samples"]
        ],
    }
    assert judged(stripped).verdict.per_gpu["0"].bottleneck == B.idle


def test_batches_built_from_lists_name_the_line_that_builds_them_not_the_start_up():
    # the optimizer's construction imported dynamo for seconds before the first step (list_batches.py:31, read as
    # compiling); the steady state starts at the first step, so the lines named are the loop's
    for mode in ("default", "no_profile", "no_gpm"):
        report = judged(MODES[f"list_batches.{mode}"])
        assert report.verdict.per_gpu["0"].bottleneck == B.input_starved, mode
        assert report.stacks is not None
        top = report.stacks.lines[0]
        assert (top.file.rsplit("/", 1)[-1], top.line, top.category) == ("list_batches.py", 18, "host_compute"), mode
        assert all(x.line != 31 for x in report.stacks.lines), mode
