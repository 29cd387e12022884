"""The rank the others wait for, and why (`diagnosis.run.rank_compare`, `rank_causes`, the `run.straggler*` rules):
on the recorded 2-rank gloo jobs (tests/fixtures/ranks) replayed through the run's judge, and on ranks made to
differ in one thing at a time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gputriage.diagnosis.run.base import RunEvidence
from gputriage.diagnosis.run.rank_causes import RanksEvidence, named_causes
from gputriage.diagnosis.run.rank_compare import CHRONIC, MIN_WAIT, ROUND, STALL, STRAGGLER_SCORE, compare
from gputriage.diagnosis.run.rules import straggler, straggler_gpu_differs, straggler_gpu_throttled
from gputriage.inworkload.stack_categories import COLLECTIVE_WAIT, GPU_WAIT, HOST_COMPUTE, INPUT_WAIT
from gputriage.model.finding import Severity
from gputriage.model.ranks import RankGpu, RankLine, RankSeries, RankWindow
from gputriage.model.recording import Recording
from gputriage.model.run import RunMeta, RunVerdict
from gputriage.sampling.windows import Windower
from gputriage.testing.recordings import judged, load_runs

RUNS = load_runs(Path(__file__).parent / "fixtures" / "ranks" / "runs_gloo.json.gz")


@pytest.mark.parametrize(
    ("key", "finding", "line"),
    [
        ("slow_loader", "run.straggler_input", "_ddp.py:76"),
        ("host_compute", "run.straggler_host_compute", "_ddp.py:84"),
        ("cpu_hog", "run.straggler_cpu_shared", None),
    ],
)
def test_the_recorded_straggler_is_named_with_its_planted_cause(key: str, finding: str, line: str | None):
    report = judged(RUNS[key])
    assert report.ranks is not None and report.ranks.stragglers == [1]
    about = [f for f in report.findings if f.id.startswith("run.straggler")]
    assert [(f.id, f.subject, f.severity) for f in about] == [(finding, "rank.1", Severity.warn)]
    (f,) = about
    assert f.evidence["chronic"] and f.evidence["score"] >= STRAGGLER_SCORE.value
    assert f.impact == pytest.approx(f.evidence["others_collective_wait_share"], abs=1e-3)  # the others' wait
    if line is not None:
        assert line in f.evidence["line"] and line in f.symptom
    s = report.ranks.straggler
    assert s is not None and s.best_rank == 0 and s.others_collective_wait_share >= MIN_WAIT.value


@pytest.mark.parametrize("key", ["healthy", "comm_bound"])
def test_ranks_alike_name_no_straggler_even_waiting_half_their_time(key: str):
    report = judged(RUNS[key])
    assert report.ranks is not None and report.ranks.straggler is None and report.ranks.stragglers == []
    assert not [f for f in report.findings if f.id.startswith("run.straggler")]
    assert all(r.score is not None and r.score < STRAGGLER_SCORE.value for r in report.ranks.per_rank)


def test_the_per_rank_table_has_each_ranks_steps_shares_and_lines():
    ranks = judged(RUNS["slow_loader"]).ranks
    assert ranks is not None and [r.rank for r in ranks.per_rank] == [0, 1] and ranks.world_size == 2
    r0, r1 = ranks.per_rank
    assert r0.step_source == "gputriage.step" and r0.steps and r0.median_step_us and r0.p90_step_us
    assert r0.median_step_us <= r0.p90_step_us
    assert r0.shares[COLLECTIVE_WAIT] > 0.5 > r1.shares[COLLECTIVE_WAIT]  # the effect: rank 0 waits for rank 1
    assert r1.lines[0].category == INPUT_WAIT and r1.lines[0].line == 76  # the steady state's, not the imports'
    assert ranks.compared_on == "own_step_us" and r1.own_step_us and r0.own_step_us
    assert r1.score == pytest.approx(r1.own_step_us / r0.own_step_us, rel=0.01)
    assert [len(s.windows) for s in ranks.series] and all(not s.snapshots for s in ranks.series)


def series(rank: int, rounds: list[dict[str, float]], steps: float = 10.0, **kw: Any) -> RankSeries:
    """A rank whose windows, one per round (after a first and before a last left out), have these shares."""
    t, dt = 1000.0, ROUND.value
    ws = [RankWindow(t0_s=t - dt, t1_s=t, samples=100, shares={INPUT_WAIT: 0.0}, steps=steps)]
    for i, shares in enumerate(rounds):
        ws.append(RankWindow(t0_s=t + i * dt, t1_s=t + (i + 1) * dt, samples=100, shares=shares, steps=steps))
    end = t + len(rounds) * dt
    ws.append(RankWindow(t0_s=end, t1_s=end + dt, samples=100, shares={}, steps=steps))
    return RankSeries(rank=rank, pid=100 + rank, node="n", step_source="gputriage.step", windows=ws, **kw)


def evidence(ranks: list[RankSeries], gpus: dict[int, RankGpu] | None = None) -> RunEvidence:
    report = compare(ranks, gpus or {}, [])
    assert report is not None
    rec = Recording(kind="run", command=[], meta=RunMeta(), gpus=[], windows=Windower([]))
    return RunEvidence(rec, 0, {}, RunVerdict(), ranks=RanksEvidence(report))


WAITS = {COLLECTIVE_WAIT: 0.5, GPU_WAIT: 0.5}  # a rank that waits for another half its time
SLOW = {COLLECTIVE_WAIT: 0.02, GPU_WAIT: 0.98}  # one whose GPU work takes longer, for no cause its evidence names


def test_slow_in_most_rounds_is_chronic_in_a_few_rounds_one_off_stalls_and_in_none_no_straggler():
    n = 10
    chronic = evidence([series(0, [WAITS] * n), series(1, [SLOW] * n)])
    assert chronic.ranks is not None and chronic.ranks.report.straggler is not None
    s = chronic.ranks.report.straggler
    assert (s.rank, s.chronic, s.slow_windows, s.windows) == (1, True, n, n) and s.score == pytest.approx(1.96)
    stalled = [SLOW if i == 3 else {COLLECTIVE_WAIT: 0.0, HOST_COMPUTE: 1.0} for i in range(n)]
    waiting = [{COLLECTIVE_WAIT: 0.6, HOST_COMPUTE: 0.4} if i == 3 else {HOST_COMPUTE: 1.0} for i in range(n)]
    one_off = evidence([series(0, waiting), series(1, stalled)]).ranks
    assert one_off is not None and one_off.report.straggler is not None
    assert (one_off.report.straggler.chronic, one_off.report.straggler.slow_windows) == (False, 1)
    assert 1 / (1 - 0.6) >= STALL.value > STRAGGLER_SCORE.value  # the stall: 2.5x in its round
    (f,) = straggler.evaluate(evidence([series(0, waiting), series(1, stalled)]))
    assert f.severity == Severity.info and "one-off: stalled in 1 of 10 rounds" in f.symptom
    assert f.impact == pytest.approx(0.6 / n, abs=1e-3)  # the others' wait over the steady state
    nobody_waits = evidence([series(0, [{HOST_COMPUTE: 0.9}] * n), series(1, [{HOST_COMPUTE: 1.0}] * n)]).ranks
    assert nobody_waits is not None and nobody_waits.report.straggler is None  # no rank waits: none holds another
    assert CHRONIC.value * n <= n


def test_a_straggler_its_evidence_cannot_explain_is_said_so_and_ranks_on_other_loops_are_not_comparable():
    unknown = evidence([series(0, [WAITS] * 6), series(1, [SLOW] * 6)])
    assert unknown.ranks is not None and named_causes(unknown.ranks) == []
    (f,) = straggler.evaluate(unknown)
    assert f.id == "run.straggler" and "names no cause" in f.symptom
    apart = evidence([series(0, [WAITS] * 6, steps=10.0), series(1, [SLOW] * 6, steps=30.0)])
    (g,) = straggler.evaluate(apart)
    assert "do not make the same steps" in g.symptom and g.evidence["steps"] == {"0": 60.0, "1": 180.0}


def test_its_gpu_throttled_or_unlike_its_peers_names_the_gpu():
    ranks = [series(0, [WAITS] * 6, gpu=0), series(1, [SLOW] * 6, gpu=1)]
    hot = {0: RankGpu(index=0, name="H100", sm_clock_mhz=1980), 1: RankGpu(index=1, name="H100", sm_clock_mhz=1400)}
    hot[1].throttled_share = 0.8
    (f,) = straggler_gpu_throttled.evaluate(evidence(ranks, hot))
    assert f.subject == "rank.1" and "1400 MHz" in f.symptom and "1980 MHz" in f.symptom
    assert not straggler.evaluate(evidence(ranks, hot))  # a cause named: not "no cause"
    narrow = {0: RankGpu(index=0, name="H100", pcie_width=16), 1: RankGpu(index=1, name="H100", pcie_width=8)}
    (g,) = straggler_gpu_differs.evaluate(evidence(ranks, narrow))
    assert "PCIe width is 8 where its peers' is 16" in g.symptom
    other = {0: RankGpu(index=0, name="H100"), 1: RankGpu(index=1, name="A100")}
    (h,) = straggler_gpu_differs.evaluate(evidence(ranks, other))
    assert "a A100 where its peers have H100" in h.symptom


def test_the_lines_a_cause_names_are_the_stragglers_own():
    lines = [RankLine(file="/u/data.py", line=40, function="read", category=INPUT_WAIT, share=0.7)]
    slow = {COLLECTIVE_WAIT: 0.02, INPUT_WAIT: 0.7, GPU_WAIT: 0.28}
    ev = evidence([series(0, [WAITS] * 6), series(1, [slow] * 6, lines=lines)])
    from gputriage.diagnosis.run.rules import straggler_input

    (f,) = straggler_input.evaluate(ev)
    assert "/u/data.py:40 (read)" in f.symptom and f.evidence["line"] == "/u/data.py:40 (read)"


def test_a_job_with_no_steady_span_is_not_compared():
    report = compare([series(0, [])], {}, [])
    assert report is not None and report.straggler is None and report.notes


def test_a_comm_bound_gpu_waiting_for_the_straggler_is_said_to_wait_for_it_in_its_verdict():
    from gputriage.diagnosis.rule import rules_of
    from gputriage.diagnosis.run.rules import waits_for_straggler
    from gputriage.diagnosis.run.stated import verdict_findings
    from gputriage.model.bottleneck import Bottleneck as B
    from gputriage.model.run import GpuVerdict

    ranks = [series(0, [WAITS] * 6, gpu=0), series(1, [SLOW] * 6, gpu=1)]
    ev = evidence(ranks, {0: RankGpu(index=0), 1: RankGpu(index=1)})
    ev.verdicts = {0: GpuVerdict(gpu=0, bottleneck=B.comm_bound, share=0.8), 1: GpuVerdict(gpu=1)}
    (f,) = waits_for_straggler.evaluate(ev)
    assert f.subject == "gpu.0" and f.symptom.startswith("GPU 0 (rank 0): its collectives wait for rank 1")
    assert f.impact == pytest.approx(0.8 * 0.5)
    stated = verdict_findings(ev, [f], rules_of("run"))
    assert [x.id for x in stated] == ["run.waits_for_straggler"]  # in place of run.comm_bound, once
    ev.verdicts[0].bottleneck = B.compute_bound
    assert waits_for_straggler.evaluate(ev) == []


def test_the_terminal_and_the_html_report_show_the_ranks_side_by_side():
    from rich.console import Console

    from gputriage.report.html_run import run_page
    from gputriage.report.run_terminal import render

    report = judged(RUNS["slow_loader"])
    console = Console(record=True, width=150)
    render(report, console)
    shown = console.export_text()
    assert "2 ranks of job" in shown and "straggler: rank 1 (" in shown and "coll wait" in shown
    row = next(line for line in shown.splitlines() if line.strip().startswith("1 ") and "%" in line)
    assert row.split()[-1] == f"{report.ranks.per_rank[1].score:.2f}"  # type: ignore[union-attr]
    html = run_page(report).render()
    assert "<h2>Ranks</h2>" in html and "Straggler: rank 1</b>" in html and "waiting for a CPU" in html
    healthy = Console(record=True, width=150)
    render(judged(RUNS["healthy"]), healthy)
    assert "no straggler: no rank held the others back" in healthy.export_text()
