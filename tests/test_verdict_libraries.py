"""The host side of a GPU library beside PyTorch or a training framework, as a window's label and a verdict's words
say it: a training framework's loop is the loop's host work counted with its launches (never input); a library
computing on the CPU is host_bound; a cause named by elimination (nothing seen says what the host does) says so, and
a trace's input_starved by elimination does not override a verdict the main thread's stacks named."""

from __future__ import annotations

from typing import Any

import pytest

from gputriage.diagnosis.run.classify import ELIMINATED, by_elimination, label
from gputriage.diagnosis.run.merge import merge
from gputriage.diagnosis.run.verdict_words import decision_of, describe
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.run import GpuVerdict
from gputriage.model.trace import TraceVerdict
from gputriage.model.window import SHARE_FIELDS, WindowMetrics
from gputriage.testing.recordings import H200_STATIC

T0 = 1_800_000_000.0
# a GPU idle most of the time, small kernels while they run (GPM), one process on it whose main thread is busy
SMALL_KERNELS = {
    "util_pct": 20.0,
    "util_max_pct": 25.0,
    "sm_active_pct": 2.0,
    "sm_active_max_pct": 3.0,
    "sm_occupancy_pct": 1.0,
    "workload_cpu_pct": 100.0,
    "gpu_process_cpu_pct": 100.0,
    "gpu_main_thread_pct": 97.0,
    "top_thread_pct": 97.0,
    "job_gpu_processes": 1.0,
    "read_mb_per_s": 0.0,
}


def window(shares: dict[str, float] | None, samples: float = 90.0, **fields: Any) -> WindowMetrics:
    values = {**SMALL_KERNELS, **fields}
    if shares is not None:
        values.update({SHARE_FIELDS[c]: shares.get(c, 0.0) for c in SHARE_FIELDS})
        values.update(host_input_loader_share=0.0, host_others_busy=0.0, host_stack_samples=samples)
    return WindowMetrics(t0_s=T0, t1_s=T0 + 1, samples=5, **values)


@pytest.mark.parametrize(
    ("shares", "expected"),
    [
        # Lightning's hooks and logging, the optimizer's launches, the DataLoader collating on the main thread: the
        # loop's host work and its launches outweigh the input it makes, though no one of them does
        # (the largest single category, the input, stays possible)
        ({"loop": 0.3, "launch": 0.25, "host_compute": 0.45}, (B.launch_bound, [B.input_starved])),
        ({"loop": 0.6, "launch": 0.1, "host_compute": 0.3}, (B.launch_bound, [])),
        # ONNX Runtime's CPU provider computing a head while the GPU waits (its read back, a sync, far behind)
        ({"host_ops": 0.8, "gpu_wait": 0.2}, (B.host_bound, [])),
        ({"host_ops": 0.5, "gpu_wait": 0.4, "launch": 0.1}, (B.host_bound, [B.sync_bound])),
        # JAX dispatching small ops one at a time, its block_until_ready at the step's end
        ({"launch": 0.85, "gpu_wait": 0.15}, (B.launch_bound, [])),
    ],
)
def test_a_librarys_or_a_frameworks_host_work_names_its_cause(
    shares: dict[str, float], expected: tuple[B, list[B]]
) -> None:
    assert label(window(shares), H200_STATIC) == expected


def test_a_frameworks_loop_while_the_gpu_runs_no_kernel_is_host_work_not_launches() -> None:
    idle = {"util_pct": 0.0, "sm_active_pct": 0.0, "sm_active_max_pct": 0.0, "sm_occupancy_pct": 0.0}
    assert label(window({"loop": 0.9, "launch": 0.1}, **idle), H200_STATIC)[0] == B.host_bound


def test_input_is_never_the_frameworks_loop() -> None:
    """Before the loop had a category of its own, its Python read as the host computing, input_starved."""
    without_loop = window({"host_compute": 0.65, "launch": 0.35})
    with_loop = window({"loop": 0.45, "host_compute": 0.2, "launch": 0.35})
    assert label(without_loop, H200_STATIC)[0] == B.input_starved
    assert label(with_loop, H200_STATIC)[0] == B.launch_bound


def test_a_cause_reached_by_elimination_says_so_and_one_seen_does_not() -> None:
    """A hot thread and a mostly idle GPU with no stack sampled: input_starved is what the counters leave, named by
    elimination (its words and its evidence say it, and what to do starts with seeing what the host does); the same
    figures with the main thread's stacks naming the cause are no elimination."""
    hot = {"util_pct": 10.0, "sm_active_pct": 8.0, "sm_active_max_pct": 9.0, "sm_occupancy_pct": 20.0}
    unseen, seen = window(None, **hot), window({"input_wait": 0.9, "launch": 0.1}, **hot)
    assert label(unseen, H200_STATIC)[0] == label(seen, H200_STATIC)[0] == B.input_starved
    assert by_elimination(unseen, H200_STATIC) and not by_elimination(seen, H200_STATIC)
    evidence = {"util_pct": 10.0, "workload_cpu_pct": 100.0, ELIMINATED: 1.0}
    said = describe(B.input_starved, evidence)
    assert "named by elimination" in said and "stacks were not sampled" in said
    assert decision_of(B.input_starved, evidence).startswith("First see what the host does")
    assert "elimination" not in describe(B.input_starved, {"util_pct": 10.0})


def test_without_process_data_the_gpu_waits_on_the_host_and_every_host_cause_stays_open() -> None:
    """`watch` of a job it did not start: no process data, a GPU mostly idle. The label is input_starved only by
    elimination; launch_bound, sync_bound and host_bound stay possible beside it, and the words say the processes
    were not sampled."""
    m = WindowMetrics(t0_s=T0, t1_s=T0 + 1, samples=5, util_pct=10.0, util_max_pct=12.0)
    got, possible = label(m, H200_STATIC)
    assert got == B.input_starved and set(possible) >= {B.launch_bound, B.sync_bound, B.host_bound}
    assert by_elimination(m, H200_STATIC)
    assert "processes were not sampled" in describe(B.input_starved, {"util_pct": 10.0, ELIMINATED: 1.0})


def _sampler(b: B, shares: dict[str, float]) -> GpuVerdict:
    evidence = {"util_pct": 20.0, "host_stack_samples": 90.0}
    evidence.update({SHARE_FIELDS[c]: shares.get(c, 0.0) for c in SHARE_FIELDS})
    return GpuVerdict(gpu=0, bottleneck=b, share=1.0, confidence=1.0, evidence=evidence)


def test_a_traces_input_by_elimination_does_not_override_what_the_main_threads_stacks_saw() -> None:
    """The sampler saw Lightning's loop and its launches; the trace, its gaps outside framework ops with no loader
    event over them: the sampler's launch_bound stands. A trace whose input the DataLoader's events showed decides."""
    sampler = _sampler(B.launch_bound, {"loop": 0.5, "launch": 0.3, "host_compute": 0.2})
    guessed = TraceVerdict(bottleneck=B.input_starved, share_pct=40.0, confidence=1.0, by_elimination=True)
    merged = merge(sampler, guessed)
    assert merged.bottleneck == B.launch_bound and merged.source == "sampler" and "elimination" in merged.why
    seen = TraceVerdict(bottleneck=B.input_starved, share_pct=40.0, confidence=1.0)
    assert merge(sampler, seen).bottleneck == B.input_starved
    loop = TraceVerdict(bottleneck=B.host_bound, share_pct=40.0, confidence=1.0, by_elimination=True)
    assert merge(sampler, loop).bottleneck == B.launch_bound  # the loop's work outside ops: the stacks saw what
    no_stacks = GpuVerdict(gpu=0, bottleneck=B.launch_bound, share=1.0, confidence=1.0, evidence={"util_pct": 20.0})
    assert merge(no_stacks, guessed).bottleneck == B.input_starved  # nothing seen on either side: the trace's
