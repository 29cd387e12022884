"""The workload's step rate cut into regimes, GPU or not (`diagnosis.run.step_regimes`), a drop of it the finding
`run.step_rate_changed` with both rates and what changed at that time, and the steady span following the steps.

Synthetic series are samples on a fake clock (no sleep, nothing timed); the recorded ones are the H200 runs whose
host windows carry the step counters (`tests/fixtures/h200/runs_*.json.gz`)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from gputriage.diagnosis.run.judge import judge
from gputriage.diagnosis.run.step_regimes import STEP_RATE_RATIO, step_regimes
from gputriage.model.run import RunMeta, RunReport
from gputriage.model.sample import Sample, WorkloadSample
from gputriage.report.html import render_html
from gputriage.report.step_regimes import terminal_lines
from gputriage.sampling.session import replay
from gputriage.sampling.windows import Windower
from recordings import FIXTURES, recorded, runs

T0 = 1_000.0


def samples(
    steps_per_window: list[float], cpu_pct: list[float] | None = None, idle_s: int = 0, per_s: int = 4
) -> list[Sample]:
    """`per_s` samples a second on a fake clock from T0; the workload reports no step for `idle_s` seconds, then
    steps_per_window[k] steps during second k after that, spread over its samples; its CPU is cpu_pct[k]."""
    out, total = [], None
    for k in range(idle_s + len(steps_per_window)):
        j = k - idle_s
        for i in range(per_s):
            if j >= 0:
                total = (total or 0.0) + steps_per_window[j] / per_s
            cpu = cpu_pct[j] if cpu_pct and j >= 0 else 100.0
            out.append(
                Sample(
                    t_s=T0 + k + i / per_s,
                    workload=WorkloadSample(
                        cpu_pct=cpu, steps_total=total, samples_total=None if total is None else 8 * total
                    ),
                )
            )
    return out


def host_of(xs: list[Sample]) -> Windower:
    w = Windower([])
    for s in xs:
        w.add(s)
    w.close()
    return w


def regimes(steps: list[float], **kw: object) -> list[tuple[float, float, float]]:
    """(start s, end s, steps/s) of each regime of a series."""
    return [(r.start_s, r.end_s, r.steps_per_s) for r in step_regimes(host_of(samples(steps, **kw)).host, T0)]


def cpu_run(xs: list[Sample]) -> RunReport:
    """A `gputriage run` of a workload on a machine with no GPU, judged."""
    return judge(replay(xs, RunMeta(), command=["python", "train.py"]), 0)


def changes(r: RunReport) -> list[dict[str, object]]:
    return [f.evidence for f in r.findings if f.id == "run.step_rate_changed"]


# ---- the cut, on synthetic series ---------------------------------------------------------------------------------


def test_a_rate_that_holds_is_one_regime_whatever_its_blips():
    steady = [30.0] * 120
    assert len(regimes(steady)) == 1
    blips = list(steady)
    blips[40] = 0.0  # a garbage collection
    blips[70:75] = [0.0] * 5  # a 5 s checkpoint, shorter than a regime
    assert [r[2] for r in regimes(blips)] == [pytest.approx(30.0 * 114 / 120, rel=0.01)]


def test_a_drop_by_five_times_half_way_is_two_regimes_with_both_rates():
    got = regimes([500.0] * 60 + [100.0] * 60)
    assert [round(r[2]) for r in got] == [500, 100]
    assert got[0][1] == got[1][0] == pytest.approx(60.0, abs=1.0)


def test_a_slow_stretch_inside_a_long_run_is_found_on_both_sides():
    """A binary split would read 100 s at 30, then 15 s at 6 + 100 s at 30, as one regime: the moving scan sees it."""
    got = regimes([30.0] * 100 + [6.0] * 15 + [30.0] * 100)
    assert [round(r[2]) for r in got] == [30, 6, 30]
    assert got[1][0] == pytest.approx(100.0, abs=1.0) and got[1][1] == pytest.approx(115.0, abs=1.0)


def test_whole_steps_at_a_low_rate_are_its_rate_not_noise():
    """One step every other second reads 0, 1, 0, 1 steps a window: a rate of 0.5, one regime; a fall to one step in
    ten seconds over two minutes is a regime (seen over 80 windows: not over 10, where it is 1 step against 5)."""
    slow = [float(k % 2) for k in range(120)]
    assert [r[2] for r in regimes(slow)] == [pytest.approx(0.5, abs=0.02)]
    slower = [1.0 if k % 10 == 0 else 0.0 for k in range(120)]
    got = regimes(slow + slower)
    assert [round(r[2], 1) for r in got] == [0.5, 0.1]


def test_noise_moves_no_regime_and_a_change_under_the_ratio_is_none():
    rng = random.Random(7)
    noisy = [max(0.0, rng.gauss(100.0, 15.0)) for _ in range(600)]
    assert len(regimes(noisy)) == 1
    smaller = [x / (STEP_RATE_RATIO.value - 0.2) for x in noisy[:100]]  # 1.3x: below the ratio
    assert len(regimes(noisy[:100] + smaller)) == 1
    halved = [x / 2 for x in noisy[:100]]
    assert [round(r[2] / 10) for r in regimes(noisy[:100] + halved)] == [10, 5]


def test_steps_reported_late_set_the_steady_span_and_the_start_up_is_left_out():
    """The run's first 33 s report no step: its steady span is the 30 s it stepped, not the 63 s it ran."""
    r = cpu_run(samples([523.0] * 15 + [78.0] * 15, idle_s=33))
    t = r.throughput
    assert t is not None and t.steady_follows == "steps"
    assert t.steady_start_s == pytest.approx(33.0, abs=1.0) and t.steady_s == pytest.approx(30.0, abs=1.0)
    assert t.steps_per_s == pytest.approx((523 + 78) / 2, rel=0.05)
    assert [round(x.steps_per_s) for x in t.step_regimes] == [523, 78]


# ---- the finding, with no GPU ------------------------------------------------------------------------------------


def test_a_cpu_run_whose_rate_drops_five_times_gets_a_finding_with_both_rates():
    r = cpu_run(samples([500.0] * 30 + [100.0] * 30))
    (f,) = [f for f in r.findings if f.id == "run.step_rate_changed"]
    assert f.evidence["rate_before"] == pytest.approx(500, rel=0.02) and f.evidence["rate_after"] == pytest.approx(
        100, rel=0.02
    )
    assert f.evidence["at_s"] == pytest.approx(30.0, abs=1.0) and f.subject == "workload"
    assert "500 → 100 steps/s (-80%)" in f.symptom and "+30 s" in f.symptom
    assert "the workload's CPU held at 100% of a core" in f.cause and "more work" in f.cause  # same CPU: more work
    assert f.impact is None  # a gain is a share of a GPU's time: none here


def test_a_drop_with_the_cpu_falling_says_the_workload_waits():
    cpu = [100.0] * 30 + [20.0] * 30
    r = cpu_run(samples([500.0] * 30 + [100.0] * 30, cpu_pct=cpu))
    (f,) = [f for f in r.findings if f.id == "run.step_rate_changed"]
    assert "the workload's CPU 100% → 20% of a core" in f.cause and "waits more" in f.cause
    assert f.evidence["workload_cpu_pct_before"] == 100.0 and f.evidence["workload_cpu_pct_after"] == 20.0


def test_what_changed_names_the_figures_that_moved_most_beside_the_cpu():
    xs = samples([500.0] * 30 + [100.0] * 30)
    for s in xs:
        assert s.workload is not None
        late = s.t_s - T0 >= 30
        s.workload.loader_cpu_pct = 80.0 if late else 320.0  # its DataLoader's workers slowed with it
    (f,) = changes(cpu_run(xs))
    assert f["loader_cpu_pct_before"] == 320.0 and f["loader_cpu_pct_after"] == 80.0
    assert "iowait_pct_before" not in f  # what did not move is not named


def test_bigger_steps_at_the_same_samples_a_second_are_a_note_not_a_slowdown():
    """Five micro-batches a step from half-way: 5x fewer steps a second, as many samples."""
    xs = samples([500.0] * 30 + [100.0] * 30)
    for s in xs:
        assert s.workload is not None and s.workload.steps_total is not None
        done = s.workload.steps_total
        s.workload.samples_total = 8 * min(done, 15_000) + 40 * max(0.0, done - 15_000)  # 8, then 40 a step
    (f,) = [f for f in cpu_run(xs).findings if f.id == "run.step_rate_changed"]
    assert f.severity.value == "info" and f.impact is None
    assert f.evidence["work_unit"] == "samples/s" and f.evidence["work_after"] == pytest.approx(4000, rel=0.03)
    assert "its samples/s held" in f.symptom and "Nothing was lost" in f.decision


def test_a_rise_is_a_regime_but_no_finding():
    r = cpu_run(samples([50.0] * 30 + [500.0] * 30))
    assert r.throughput is not None and len(r.throughput.step_regimes) == 2
    assert changes(r) == []


# ---- recorded runs ------------------------------------------------------------------------------------------------

SHIFTS = {
    ("runs_regime_shift.json.gz", "regime_shift"),
    ("runs_regime_shift_rearm.json.gz", "regime_shift_next_batch"),
    ("runs_live_rerun.json.gz", "regime_shift_profiled"),
    ("runs_live_rerun.json.gz", "regime_shift_181_profiled"),
}
GROWING = ("runs_unseen4.json.gz", "recompile_shapes_long_gpm")


def test_the_regime_shift_recordings_have_three_step_regimes_at_their_planted_rates():
    """`examples/workloads/regime_shift.py` on an H200: compute-bound, a 150 ms host wait per step, compute-bound."""
    for fixture, name in sorted(SHIFTS):
        rec = recorded(runs(fixture)[name])
        got = step_regimes(rec.windows.host, rec.started_s or 0.0)
        assert len(got) == 3, (name, got)
        assert [r.steps_per_s == pytest.approx(30, abs=1.5) for r in got] == [True, False, True]
        assert 5.5 <= got[1].steps_per_s <= 7.0, name  # a 150 ms wait on each step of ~33 ms
        assert 45 <= got[1].end_s - got[1].start_s <= 70, name


def test_every_recorded_run_of_one_loop_holds_one_step_regime():
    """The thresholds' source: of every recorded H200 run with steps, only the planted shifts change rate, and the
    one loop whose steps grow (`recompile_shapes.py`: 8 tokens longer and a new graph at each step), whose rate fell
    3.3 → 2.1 steps/s at +38 s of its 45 s."""
    seen = 0
    for path in sorted(FIXTURES.glob("runs_*.json.gz")):
        for name, run in runs(path.name).items():
            if (path.name, name) in SHIFTS | {GROWING} or "samples" not in run:
                continue
            rec = recorded(run)
            got = step_regimes(rec.windows.host, rec.started_s or 0.0)
            seen += bool(got)
            assert len(got) <= 1, (path.name, name, got)
    assert seen > 150


def test_a_recorded_loop_whose_steps_grow_is_told_its_tokens_a_second_held():
    """recompile_shapes: 8 tokens more at each step; fewer steps a second from +38 s, more tokens a second."""
    (f,) = [f for f in judge(recorded(runs(GROWING[0])[GROWING[1]]), 0).findings if f.id == "run.step_rate_changed"]
    ev = f.evidence
    assert ev["rate_before"] == pytest.approx(3.3, abs=0.1) and ev["rate_after"] == pytest.approx(2.05, abs=0.1)
    assert 35 <= ev["at_s"] <= 41
    assert f.severity.value == "info" and ev["work_unit"] == "tokens/s" and ev["work_after"] > ev["work_before"]


def test_a_gpu_regime_change_that_gave_the_rate_says_it_once_and_the_host_only_view_says_it_as_steps():
    run = runs("runs_regime_shift.json.gz")["regime_shift"]
    report = judge(recorded(run), 0)
    assert [f.evidence["to"] for f in report.findings if f.id == "run.regime_changed"] == [
        "input_starved",
        "compute_bound",
    ]
    assert changes(report) == []  # the GPU's change said it, with the rate
    host_only = msgspec.structs.replace(recorded(run).meta, gpus={})
    samples_ = [msgspec.convert(s, Sample) for s in run["samples"]]
    (f,) = changes(judge(replay(samples_, host_only, command=run["command"]), 0))
    assert f["rate_before"] == pytest.approx(30, rel=0.05) and f["rate_after"] == pytest.approx(5.6, rel=0.1)
    assert f["workload_cpu_pct_before"] > 80 > 30 > f["workload_cpu_pct_after"]  # it waits: a 150 ms sleep a step
    assert f["host_input_wait_share_after"] > 0.5


# ---- the reports ----------------------------------------------------------------------------------------------------


def test_terminal_json_and_html_name_the_regimes_and_the_finding():
    r = cpu_run(samples([500.0] * 30 + [100.0] * 30))
    assert r.throughput is not None
    line = terminal_lines(r.throughput)[0].plain
    assert "–30 s 500 steps/s" in line and "30–60 s 100 steps/s" in line
    doc = msgspec.json.decode(msgspec.json.encode(r))
    assert [round(x["steps_per_s"]) for x in doc["throughput"]["step_regimes"]] == [500, 100]
    assert any(f["id"] == "run.step_rate_changed" for f in doc["findings"])
    page = render_html(r)
    assert "Step rate by regime" in page and "500 → 100 steps/s" in page


def test_the_terminal_says_the_span_it_stepped(tmp_path: Path):
    from rich.console import Console

    from gputriage.report.run_terminal import render

    r = cpu_run(samples([500.0] * 30 + [100.0] * 30, idle_s=10))
    console = Console(file=(tmp_path / "out.txt").open("w"), width=200)
    render(r, console)
    console.file.close()
    text = (tmp_path / "out.txt").read_text()
    assert "s it stepped from +11 s" in text and "step rate by regime: 11–40 s 500 steps/s" in text
    assert "step rate fell 500 → 100 steps/s" in text


# ---- a real CPU run -----------------------------------------------------------------------------------------------

SLOWS = Path(__file__).parent / "workloads" / "slows_half_way.py"


def test_a_real_cpu_loop_that_slows_five_times_half_way_gets_the_finding_with_both_rates(tmp_path: Path):
    """`gputriage run` of a Python loop doing 5x the work per step after 12 s: the finding names the rates the loop
    itself counted in each half (within a tolerance: a loaded machine moves them), at about the time it slowed."""
    halves = tmp_path / "halves.json"
    r = subprocess.run(
        [sys.executable, "-m", "gputriage", "run", "--no-store", "--json", "--"]
        + [sys.executable, str(SLOWS), str(halves)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(r.stdout)
    first, second = (h["steps"] / (h["end_s"] - h["start_s"]) for h in json.loads(halves.read_text()))
    assert first > 2.5 * second  # the loop itself slowed (5x the work)
    found = [f for f in report["findings"] if f["id"] == "run.step_rate_changed"]
    slowed_at = json.loads(halves.read_text())[1]["start_s"] - report["started_s"]
    f = min(found, key=lambda f: abs(f["evidence"]["at_s"] - slowed_at))["evidence"]
    assert abs(f["at_s"] - slowed_at) <= 3.0
    assert f["rate_before"] == pytest.approx(first, rel=0.3) and f["rate_after"] == pytest.approx(second, rel=0.3)
    assert f["rate_before"] / f["rate_after"] > 2.5
