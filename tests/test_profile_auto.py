"""`--profile auto` on H200 recordings: the gallery profiled only where the sampler left causes open, a window
profiled in the warm-up asked again after the first step, a loop whose GPU reads 0% profiled once it steps."""

from __future__ import annotations

from gputriage.diagnosis.run.profile_gate import ProfileGate
from gputriage.model.bottleneck import Bottleneck as B
from recordings import judged, recorded, runs

UNSEEN2 = runs("runs_unseen2.json.gz")
PIPES = runs("runs_pipes.json.gz")
AUTO = runs("runs_auto.json.gz")
FIRST6 = runs("runs_unseen6.json.gz")


# recorded before busy SMs with quiet math pipes and DRAM >= 30% of peak left memory_bound open (their GEMMs take
# turns with elementwise kernels): today's gate would profile them
MIXED = {"gpt_loop", "gpt_loop_fixed", "input_starved_fixed"}


def test_under_the_default_auto_the_gallery_is_profiled_only_where_the_sampler_left_causes_open():
    profiled = []
    for name, rec in AUTO.items():
        report = judged(rec)
        assert report.verdict.bottleneck.value == rec["merged"], name  # as the live report said
        v = report.verdict.per_gpu["0"]
        assert rec["profile"]["mode"] == "auto"
        if name in MIXED:
            assert not rec["profile"].get("asked") and v.undecided_between == [B.compute_bound, B.memory_bound]
            continue
        assert bool(rec["profile"].get("asked")) == bool(v.undecided_between), name
        if v.undecided_between:
            profiled.append(name)
            assert report.verdict.merged.trace == report.verdict.bottleneck, name  # each trace agreed with the lead
    # the host-side causes the counters cannot separate, and the recompiles (the steady state from the first step)
    assert sorted(profiled) == [
        "cpu_optimizer",
        "host_stats",
        "input_starved",
        "item_sync",
        "launch_bound",
        "recompile_shapes",
    ]


def test_a_window_profiled_in_the_warm_up_does_not_decide_and_the_gate_asks_again_after_the_first_step():
    # eager decode under --no-gpm: the gate asked at +10 s, in the 18 s first generate() (cuDNN building its
    # attention plans, GPU-Util 2%); its trace said host_bound (time inside scaled_dot_product_attention)
    rec = UNSEEN2["decode_small_kv_nogpm"]
    report = judged(rec)
    assert report.verdict.profiler_effect.in_startup and report.verdict.bottleneck == B.input_starved
    assert "start-up" in report.verdict.merged.why and report.verdict.merged.trace == B.host_bound
    run = recorded(rec)
    window = tuple(rec["profile"]["window_s"])
    gate = ProfileGate("auto", {0: run.meta.gpus["0"]})
    late = None
    for w in run.windows.series[0]:
        gate.add(0, w)
        gate.first(w.t1_s)
        if w.t0_s > window[1] and not gate.profiled:
            assert gate.again(window) is None  # like the warm-up it was asked in
        late = late or gate.late()
    assert gate.first_step_s is not None and late is not None and "first reported step" in late
    assert gate.asked == 2 and gate.late() is None  # once
    # live with that rule (the same script, 20 s): the second window, in the steady run, says launch_bound
    again = PIPES["decode_small_kv_nogpm"]
    assert any("first reported step" in r for r in again["profile"]["asked"])
    assert judged(again).verdict.bottleneck == B.launch_bound


def test_a_loop_whose_gpu_reads_0_percent_is_profiled_once_it_reports_steps():
    # the host held the GIL so long that the GPU never reached 1% GPU-Util: --profile auto never saw it in use
    rec = recorded(FIRST6["gil_contention_nogpm"])
    assert max(w.util_pct or 0.0 for w in rec.windows.series[0]) < 1.0
    gate = ProfileGate("auto", {0: rec.meta.gpus["0"]})
    asked = None
    for w in rec.windows.series[0]:
        gate.add(0, w)
        asked = asked or gate.first(w.t1_s)
    assert asked is not None and "host_bound" in asked
