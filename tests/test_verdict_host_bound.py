"""host_bound: the host computes, writes or holds the GIL while the GPU waits, on H200 recordings — checkpoints
saved from the loop, a Python thread beside the launching one, data read back from the GPU told from the read
requests of copies to it — and what the report says of the host side."""

from __future__ import annotations

import io

from rich.console import Console

from gputriage.diagnosis.bottlenecks import HOST_WRITES_DECISION, OTHER_THREAD_DECISION
from gputriage.diagnosis.run.host_side import HOST_READS_BACK, HOST_WRITES, HOT_THREAD, MAIN_THREAD_WAITS, reads_back
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.report import run_terminal
from gputriage.report.html import render_html
from recordings import judged, runs

UNSEEN2 = runs("runs_unseen2.json.gz")
HELPERS = runs("runs_helpers.json.gz")
FIRST6 = runs("runs_unseen6.json.gz")
AGAIN6 = runs("runs_unseen6_again.json.gz")
GALLERY = runs("runs_gallery_round6.json.gz")


def test_a_loop_that_saves_checkpoints_while_the_gpu_waits_is_told_to_save_less_often_or_off_the_loop():
    for name in ("checkpoint_often_gpm", "checkpoint_often_nogpm"):  # 1.6 GB torch.save every 10 steps
        v = judged(UNSEEN2[name]).verdict.per_gpu["0"]
        assert v.bottleneck == B.host_bound and v.evidence["write_mb_per_s"] >= HOST_WRITES.value
        assert "to storage" in v.summary and v.decision == HOST_WRITES_DECISION
    numpy = judged(UNSEEN2["cpu_postprocess_gpm"]).verdict.per_gpu["0"]  # host work on results, nothing written
    assert numpy.bottleneck == B.host_bound and numpy.decision != HOST_WRITES_DECISION
    assert numpy.evidence.get("write_mb_per_s", 0.0) < 1


def test_the_report_says_how_much_cpu_the_processes_on_the_gpu_took_and_what_the_workload_wrote():
    for rec, said in (
        (HELPERS["workers_augment_gpm"], "in the processes on the GPU"),
        (UNSEEN2["checkpoint_often_gpm"], "writes"),
    ):
        report = judged(rec)
        console = Console(file=io.StringIO(), width=160)
        run_terminal.render(report, console)
        host = [line for line in console.file.getvalue().splitlines() if line.startswith("host:")][0]
        assert said in host
        assert said in render_html(report)


def test_a_python_thread_holding_the_gil_is_told_from_the_training_thread_making_its_input():
    # the first runs had no main-thread figure: a thread at 99%, nothing read, the GPU idle read input_starved
    # (DataLoader advice) in both modes, and its trace said the same (the launching thread waits outside ops)
    assert judged(FIRST6["gil_contention"]).verdict.bottleneck == B.input_starved
    for name in ("gil_contention", "gil_contention_nogpm"):
        report = judged(AGAIN6[name])
        v = report.verdict.per_gpu["0"]
        e = v.evidence
        assert v.bottleneck == B.host_bound and v.decision == OTHER_THREAD_DECISION
        assert e["gpu_main_thread_pct"] < MAIN_THREAD_WAITS.value
        assert e["gpu_process_cpu_pct"] - e["gpu_main_thread_pct"] >= HOT_THREAD.value
        assert "beside the main one" in v.summary
        merged = report.verdict.merged
        assert merged is not None and merged.trace == B.input_starved and merged.bottleneck == B.host_bound
    assert not judged(AGAIN6["gil_contention"]).verdict.per_gpu["0"].undecided_between  # decided with GPM
    # the training thread that makes its own input is the main one, busy: input_starved as before
    own = judged(AGAIN6["cpu_augment"]).verdict.per_gpu["0"]
    assert own.bottleneck == B.input_starved and own.evidence["gpu_main_thread_pct"] >= 85
    # autograd's thread launching the backward beside a main thread at 40%: launch_bound, not this
    assert judged(AGAIN6["lstm_timesteps"]).verdict.per_gpu["0"].evidence["gpu_main_thread_pct"] < 50


def test_data_read_back_is_told_from_the_read_requests_of_copies_to_the_gpu():
    host_stats = judged(GALLERY["host_stats"]).verdict.per_gpu["0"].evidence  # numpy on an activation read back
    assert reads_back(host_stats["pcie_tx_mib_per_s"], host_stats["pcie_rx_mib_per_s"]) >= HOST_READS_BACK.value
    pinned = judged(AGAIN6["pin_every_step"]).verdict.per_gpu["0"].evidence  # 18.8 GB/s sent, nothing read back
    assert (
        pinned["pcie_tx_mib_per_s"] > 1000
        and reads_back(pinned["pcie_tx_mib_per_s"], pinned["pcie_rx_mib_per_s"]) < HOST_READS_BACK.value
    )
