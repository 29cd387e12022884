"""The host side decided from where the main thread spends its time (the stack sampler's shares), not from CPU
percentages alone: a thread waiting on a paced queue beside spinning OpenMP threads is the input rate, not the
GIL; models moved between host and GPU are copies; the lines each host-side verdict names; the CPU's rules where
no stack was sampled or a Python thread beside the main one works."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from gputriage.diagnosis.bottlenecks import INPUT_WORKERS_DECISION
from gputriage.diagnosis.run.classify import label
from gputriage.diagnosis.run.host_stacks import COMPILE_DECISION, run_stacks
from gputriage.diagnosis.run.judge import judge
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.recording import Recording
from gputriage.model.run import RunMeta
from gputriage.model.sample import GpuSample, HostSample, Sample, StackCounts, StackLine, WorkloadSample
from gputriage.model.window import SHARE_FIELDS, WindowMetrics
from gputriage.sampling.windows import Windower
from gputriage.testing.recordings import H200_STATIC

T0 = 1_800_000_000.0
# a GPU idle most of the time, kernels that fill it while they run (GPM), the workload's CPU: a main thread at 6% of
# a core, 150% beside it in the same process (OpenMP threads spinning): by CPU alone, a thread holding the GIL
IDLE_GPU = {
    "util_pct": 8.0,
    "util_max_pct": 12.0,
    "sm_active_pct": 7.0,
    "sm_active_max_pct": 10.0,
    "sm_occupancy_pct": 3.0,
    "workload_cpu_pct": 156.0,
    "gpu_process_cpu_pct": 156.0,
    "gpu_main_thread_pct": 6.0,
    "top_thread_pct": 75.0,
    "job_gpu_processes": 1.0,
    "read_mb_per_s": 0.1,
}


def window(shares: dict[str, float], samples: float = 90.0, **fields: Any) -> WindowMetrics:
    values = {**IDLE_GPU, **fields, **{SHARE_FIELDS[c]: 0.0 for c in SHARE_FIELDS}}
    values.update({SHARE_FIELDS[c]: s for c, s in shares.items() if c in SHARE_FIELDS})
    values.setdefault("host_input_loader_share", shares.get("loader", 0.0))
    values.setdefault("host_others_busy", 0.0)
    return WindowMetrics(t0_s=T0, t1_s=T0 + 1, samples=5, host_stack_samples=samples, **values)


def test_by_cpu_alone_the_paced_queue_beside_spinning_threads_reads_as_a_gil_holder():
    no_stacks = WindowMetrics(t0_s=T0, t1_s=T0 + 1, samples=5, **IDLE_GPU)
    assert label(no_stacks, H200_STATIC)[0] == B.host_bound
    assert label(window({"input_wait": 0.9, "launch": 0.1}), H200_STATIC) == (B.input_starved, [])


@pytest.mark.parametrize(
    "shares, fields, expected",
    [
        ({"input_wait": 0.7, "loader": 0.7, "launch": 0.3}, {}, (B.input_starved, [])),  # a DataLoader's workers
        (
            {"copy": 0.7, "launch": 0.2},
            {"pcie_tx_mib_per_s": 1500.0, "pcie_rx_mib_per_s": 1500.0},
            (B.h2d_copy_bound, []),
        ),  # whole models moved each step: the copies, not host work on results
        ({"host_compute": 0.8, "input_wait": 0.2}, {}, (B.input_starved, [B.host_bound])),  # batches from Python lists
        ({"host_compute": 0.9, "gpu_wait": 0.05, "launch": 0.05}, {}, (B.input_starved, [B.host_bound])),
        (
            {"host_compute": 0.6, "gpu_wait": 0.32, "launch": 0.08},
            {},
            (B.sync_bound, [B.host_bound, B.input_starved]),
        ),  # a scalar read every step (`float(loss)`), then NumPy on the host while the GPU has nothing queued
        ({"host_compute": 0.8}, {"pcie_tx_mib_per_s": 400.0}, (B.host_bound, [])),  # numpy on results read back
        ({"host_compute": 0.8}, {"gpu_process_cpu_pct": 700.0, "workload_cpu_pct": 700.0}, (B.host_bound, [])),
        ({"gpu_wait": 0.6, "launch": 0.4}, {}, (B.sync_bound, [B.launch_bound])),
        ({"compile": 0.9}, {}, (B.host_bound, [])),
        ({"gc": 0.6, "host_compute": 0.4}, {}, (B.host_bound, [B.input_starved])),
        ({"launch": 0.9}, {"sm_active_pct": 2.0}, (B.launch_bound, [])),  # small kernels
    ],
)
def test_the_main_thread_s_dominant_category_names_the_cause(shares, fields, expected):
    assert label(window(shares, **fields), H200_STATIC) == expected


def test_the_cpu_rules_decide_without_enough_samples_or_with_a_python_thread_at_work_beside_the_main_one():
    cpu_rule = label(WindowMetrics(t0_s=T0, t1_s=T0 + 1, samples=5, **IDLE_GPU), H200_STATIC)
    assert label(window({"input_wait": 0.7, "launch": 0.3}, samples=15), H200_STATIC) == cpu_rule
    assert label(window({"input_wait": 0.9}, samples=9), H200_STATIC) == cpu_rule
    assert label(window({"input_wait": 0.9}, host_others_busy=0.95), H200_STATIC) == cpu_rule  # the GIL's holder
    # launching kernels that fill the GPU: left to the CPU's figures
    assert label(window({"launch": 0.9}, sm_active_pct=8.0), H200_STATIC)[0] != B.launch_bound


def test_a_main_thread_holding_the_interpreter_through_compiles_decides_from_few_samples():
    # recorded on an H200 (torch.compile from cold caches): 10-16 rounds in a second, compiling 0.6-0.96 of them
    busy = {"workload_cpu_pct": 99.0, "gpu_process_cpu_pct": 99.0, "gpu_main_thread_pct": 99.0, "top_thread_pct": 99.0}
    compiling = {"compile": 0.95, "launch": 0.05}
    assert label(window(compiling, samples=9, **busy), H200_STATIC)[0] == B.input_starved  # the CPU's figures
    assert label(window(compiling, samples=15, **busy), H200_STATIC) == (B.host_bound, [])


def test_in_torch_s_ops_while_the_gpu_runs_no_kernel_the_host_works():
    # GPU-Util 0%: the main thread in torch's Python (a compiled function's guards, its eager fallback, recorded on
    # an H200: launch 0.55-0.97 of a window, compile the rest) works on the host; before, at 0% the kernels did not
    # read as small and the CPU's figures said sync_bound or input_starved
    idle = {"util_pct": 0.0, "sm_active_pct": 0.0, "sm_active_max_pct": 0.0, "sm_occupancy_pct": 0.0}
    assert label(window({"launch": 0.55, "compile": 0.43, "gc": 0.02}, **idle), H200_STATIC) == (B.host_bound, [])
    # a kernel ran: launching it is what the GPU waits on
    busy = {"util_pct": 20.0, "sm_active_pct": 2.0, "sm_active_max_pct": 3.0, "sm_occupancy_pct": 1.0}
    assert label(window({"launch": 0.55, "compile": 0.43}, **busy), H200_STATIC) == (B.launch_bound, [B.host_bound])


def stacked_run(
    main: dict[str, float],
    lines: list[tuple[Any, ...]],  # file, line, function, category, main, all, and own where the sampler said
    *,
    cpu_share: float,
    seconds: int = 12,
    hz: float = 100.0,
    gpu: bool = True,
    **fields: Any,
) -> Recording:
    """A run whose samples carry cumulative stack counts growing at `main` shares of `hz` a second (the lines'
    counts likewise, per second), the main thread on the CPU `cpu_share` of the time; GPU-Util 8%."""
    w = Windower([0] if gpu else [])
    for i in range(seconds * 5 + 1):
        t = i * 0.2
        stacks = StackCounts(
            ticks=hz * t,
            main={c: s * hz * t for c, s in main.items()},
            all={c: s * hz * t for c, s in main.items()},
            main_cpu_s=cpu_share * t,
            wall_s=t,
            lines=[StackLine(f, n, fn, c, m * t, a * t, *own) for f, n, fn, c, m, a, *own in lines]
            if i % 5 == 0
            else None,
        )
        w.add(
            Sample(
                t_s=T0 + t,
                gpus=[GpuSample(index=0, util_pct=8.0, sm_active_pct=7.0, sm_occupancy_pct=3.0, power_mw=120_000)]
                if gpu
                else [],
                host=HostSample(cpu_busy_pct=[40.0, 30.0]),
                workload=WorkloadSample(
                    cpu_pct=20.0,
                    gpu_process_cpu_pct=20.0,
                    gpu_main_thread_pct=6.0,
                    top_thread_pct=10.0,
                    rchar_bytes_per_s=1000.0,
                    stacks=stacks,
                    **fields,
                ),
            )
        )
    w.close()
    return Recording(
        kind="run",
        command=["python", "serve.py"],
        meta=RunMeta(gpus={"0": H200_STATIC} if gpu else {}),
        gpus=[0] if gpu else [],
        windows=w,
    )


SERVE = [
    ("/srv/serve.py", 31, "main", "input_wait", 90.0, 90.0),
    ("/srv/serve.py", 33, "main", "launch", 10.0, 10.0),
    ("/srv/serve.py", 12, "producer", "input_wait", 0.0, 100.0),
]


def test_a_service_fed_by_a_paced_queue_is_bound_by_its_input_rate():
    report = judge(stacked_run({"input_wait": 0.9, "launch": 0.1, "loader": 0.0}, SERVE, cpu_share=0.06), 0)
    v = report.verdict.per_gpu["0"]
    assert v.bottleneck == B.input_starved
    assert "input rate is the limit" in v.decision and "92% headroom" in v.decision and "batch requests" in v.decision
    assert "serve.py:31 in main" in v.summary
    assert [(x.line, x.category, x.main) for x in v.lines][:3] == [
        (12, "input_wait", False),
        (31, "input_wait", True),
        (33, "launch", True),
    ]
    assert v.finding == "run.input_rate_bound"  # stated once, in the verdict
    assert not [f for f in report.findings if f.id.startswith("run.input")]
    assert report.stacks is not None and report.stacks.main_shares["input_wait"] == pytest.approx(0.9, abs=0.02)


def test_a_loop_waiting_on_its_dataloader_is_input_starved_on_its_workers():
    lines = [("/w/train.py", 40, "train", "input_wait", 80.0, 80.0), ("/w/train.py", 41, "train", "launch", 20.0, 20.0)]
    report = judge(stacked_run({"input_wait": 0.8, "launch": 0.2, "loader": 0.8}, lines, cpu_share=0.2), 0)
    v = report.verdict.per_gpu["0"]
    assert v.bottleneck == B.input_starved and v.decision == INPUT_WORKERS_DECISION
    assert v.finding == "run.input_starved" and v.lines


def test_a_recompiling_loop_is_told_to_find_why_it_compiles():
    lines = [("/w/train.py", 12, "step", "compile", 85.0, 85.0), ("/w/train.py", 13, "step", "launch", 15.0, 15.0)]
    v = judge(stacked_run({"compile": 0.85, "launch": 0.15}, lines, cpu_share=0.95), 0).verdict.per_gpu["0"]
    assert v.bottleneck == B.host_bound and v.decision == COMPILE_DECISION
    assert "compiles 85%" in v.summary and v.lines[0].line == 12


def test_lines_take_the_main_thread_s_correction_and_its_uncaught_cpu_time():
    # seen waiting 100% of the samples (bursts shorter than the interpreter's switch interval) but on the CPU 20%
    lines = [("/w/loop.py", 27, "main", "input_wait", 100.0, 100.0)]
    rec = stacked_run({"input_wait": 1.0}, lines, cpu_share=0.2, gpu=False)
    stacks = run_stacks(rec.windows, T0, T0 + 12)
    assert stacks is not None and stacks.main_shares["input_wait"] == pytest.approx(0.8, abs=0.01)
    assert stacks.main_cpu_pct == pytest.approx(20.0, abs=0.5)
    waited, between = stacks.lines
    assert (waited.line, waited.share) == (27, pytest.approx(0.8, abs=0.01))
    assert between.inferred and between.category == "host_compute" and between.share == pytest.approx(0.2, abs=0.01)
    assert between.function == "main"


def test_a_librarys_thread_parked_in_a_wait_is_left_out_as_the_sampler_saw_its_file():
    """torch built from source (no site-packages in its path): the sampler tells its DataLoader's pin-memory thread
    from the workload's code by its own classification of files; a recording made before the sampler said so is
    judged from the path, which takes that thread for the workload's."""
    from gputriage.inworkload.stack_classify import own

    main = ("/w/loop.py", 27, "main", "host_compute", 100.0, 100.0)
    pin = "/src/pytorch/torch/utils/data/_utils/pin_memory.py"
    parked = (pin, 52, "do_one_step", "input_wait", 0.0, 300.0)
    assert own(pin) == 0 and own(main[0]) == 1
    for own_flag, kept in ((False, False), (None, True)):
        lines = [main, (*parked, own_flag) if own_flag is not None else parked]
        stacks = run_stacks(stacked_run({"host_compute": 1.0}, lines, cpu_share=1.0, gpu=False).windows, T0, T0 + 12)
        assert stacks is not None and any(x.file == pin for x in stacks.lines) == kept


def test_a_run_without_a_gpu_keeps_its_lines_over_the_whole_run():
    lines = [
        ("/w/loop.py", 27, "main", "input_wait", 70.0, 70.0),
        ("/w/loop.py", 28, "<listcomp>", "host_compute", 30.0, 30.0),
    ]
    report = judge(stacked_run({"input_wait": 0.7, "host_compute": 0.3}, lines, cpu_share=0.3, gpu=False), 0)
    assert report.verdict.per_gpu == {} and report.stacks is not None
    assert [(x.line, x.category, x.share) for x in report.stacks.lines] == [
        (27, "input_wait", pytest.approx(0.7, abs=0.01)),
        (28, "host_compute", pytest.approx(0.3, abs=0.01)),
    ]
    assert report.stacks.span_s == pytest.approx(12.0, abs=0.5)


Spent = dict[tuple[int, str, str], float]  # (line of /w/s.py, function, category) -> seconds the main thread spent


def phased_run(
    spent: Callable[[float], Spent],
    cpu_s: Callable[[float], float],
    *,
    seconds: float = 12.0,
    lines_every: int = 5,
    util: Callable[[float], float] = lambda t: 9.0,
) -> Windower:
    """A run sampled every 0.2 s whose main thread spent `spent(t)` by time t at each line (100 samples a second),
    on the CPU `cpu_s(t)`; the lines carried by every `lines_every`-th sample; GPU-Util `util(t)`."""
    w = Windower([0])
    for i in range(round(seconds * 5) + 1):
        t = i * 0.2
        by_line = spent(t)
        by_category: dict[str, float] = {}
        for (_, _, category), s in by_line.items():
            by_category[category] = by_category.get(category, 0.0) + 100 * s
        lines = [StackLine("/w/s.py", n, fn, c, 100 * s, 100 * s) for (n, fn, c), s in by_line.items()]
        busy = util(t)
        w.add(
            Sample(
                t_s=T0 + t,
                gpus=[GpuSample(index=0, util_pct=busy, sm_active_pct=max(0.0, busy - 1.0), sm_occupancy_pct=3.0)],
                workload=WorkloadSample(
                    cpu_pct=20.0,
                    stacks=StackCounts(
                        ticks=100 * t,
                        main=by_category,
                        all=dict(by_category),
                        main_cpu_s=cpu_s(t),
                        wall_s=t,
                        lines=lines if i % lines_every == 0 else None,
                    ),
                ),
            )
        )
    w.close()
    return w


def test_only_the_steady_state_s_lines_count():
    # the first seconds import and build (host_compute at the import line), then the loop waits on its queue
    w = phased_run(
        lambda t: {(3, "<module>", "host_compute"): min(t, 4.0), (30, "main", "input_wait"): max(0.0, t - 4.0)},
        lambda t: 0.5 * min(t, 4.0),
        util=lambda t: 9.0 if t >= 4 else 0.0,
    )
    report = judge(Recording(kind="run", command=[], meta=RunMeta(gpus={"0": H200_STATIC}), gpus=[0], windows=w), 0)
    assert report.verdict.per_gpu["0"].startup_s >= 3.5
    assert report.stacks is not None and [x.line for x in report.stacks.lines] == [30]


def test_the_time_the_profiler_held_the_workload_is_not_the_workload_s():
    # the loop waits on its queue; from 5 to 8 s the profiler starts in its main thread (recorded on an H200: a
    # batch-1 encoder's lines read "compile 36%" from the profiler's start-up before this was left out)
    def held(t: float) -> float:
        return min(max(0.0, t - 5.0), 3.0)

    w = phased_run(
        lambda t: {(30, "main", "input_wait"): t - held(t), (31, "main", "compile"): held(t)},
        lambda t: 0.05 * (t - held(t)) + held(t),
    )
    whole = run_stacks(w, T0, T0 + 12)
    assert whole is not None and whole.main_shares["compile"] >= 0.25
    stacks = run_stacks(w, T0, T0 + 12, exclude_s=[(T0 + 5.0, T0 + 8.0)])
    assert stacks is not None and stacks.main_shares["compile"] == pytest.approx(0.0, abs=0.01)
    assert [x.line for x in stacks.lines if not x.inferred] == [30] and stacks.span_s == pytest.approx(9.0, abs=0.5)


def test_without_gpm_a_lightly_used_gpu_s_power_cannot_say_its_kernels_are_large():
    # recorded on an H200 under --no-gpm: a batch-1 eager encoder, its main thread launching 100% of its time, at
    # GPU-Util 27% and 144 W of 700 (120 W idle): 0.76 x GPU-Util, neither small (< 0.6) nor large (>= 0.9)
    no_gpm = {"sm_active_pct": None, "sm_active_max_pct": None, "sm_occupancy_pct": None, "util_pct": 27.0}
    encoder = window({"launch": 1.0}, power_w=144.0, **no_gpm)
    assert label(encoder, H200_STATIC) == (B.launch_bound, [])
    # drawing 1.1 x GPU-Util (large kernels between waits): launching is left to the CPU's figures
    assert label(window({"launch": 1.0}, power_w=208.0, **no_gpm), H200_STATIC)[0] != B.launch_bound


def test_a_short_steady_span_starts_at_the_counts_nearest_its_start():
    # counts with lines come every 1.2 s; imports until 5.8 s, then the loop waits on its queue, judged from 5.9 to
    # 9 s (a batch-1 encoder on an H200 whose profiler took the rest: the imports had read 25% of its steady time)
    w = phased_run(
        lambda t: {(3, "<module>", "host_compute"): min(t, 5.8), (30, "main", "input_wait"): max(0.0, t - 5.8)},
        lambda t: min(t, 5.8),
        seconds=10.0,
        lines_every=6,
    )
    stacks = run_stacks(w, T0 + 5.9, T0 + 9.0)
    assert stacks is not None and [x.line for x in stacks.lines if not x.inferred] == [30]


def test_a_verdict_s_shares_are_the_main_thread_s_time_over_its_windows():
    # windows that take turns compiling (few samples: the main thread holds the interpreter) and running torch's
    # ops: the evidence weighs each by its samples, and the shares add up (a median per category said 93% on an H200)
    from gputriage.diagnosis.run.evidence import window_evidence

    compiling = window({"compile": 0.95, "launch": 0.05}, samples=15)
    running = window({"compile": 0.3, "launch": 0.7}, samples=40)
    got = window_evidence([compiling, compiling, running])
    assert got["host_compile_share"] == pytest.approx((2 * 0.95 * 15 + 0.3 * 40) / 70, abs=0.01)
    assert sum(got[f] for f in SHARE_FIELDS.values()) == pytest.approx(1.0, abs=0.02)
    assert got["host_stack_samples"] == 70.0  # the samples behind them
    running_hot = window({"compile": 0.3, "launch": 0.7}, samples=40, top_thread_pct=99.0)
    assert window_evidence([compiling, compiling, running_hot])["top_thread_pct"] == 75.0  # the rest: medians


def test_a_service_between_requests_is_not_left_open_to_idle():
    # paced_queue_service.py on an H200 in its three modes: GPU-Util 0% between requests, the main thread waiting
    # for them 96-97%; the stacks tell it waits at the input rate, so nothing is left open ("idle", which a profile
    # could not separate, was offered before)
    from recordings import judged as judged_recording
    from recordings import runs

    live = runs("runs_host_side_live.json.gz")
    for mode in ("default", "no_profile", "no_gpm"):
        v = judged_recording(live[f"paced_queue_service.{mode}"]).verdict.per_gpu["0"]
        assert v.bottleneck == B.input_starved and v.undecided_between == [] and v.confidence == v.share, mode
