"""Precision, recall and the confusion matrix over the recorded cases: how each is counted (one cause, "none", a
case left unanswered, causes left open, a load's findings), each run's source read from its recording, and another
tool's answers scored from a JSON file as ours are."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from gputriage.testing.accuracy import Case, Outcome, load_manifest, replay, source_of, sources
from gputriage.testing.accuracy_page import answers_text, text
from gputriage.testing.accuracy_score import (
    UNANSWERED,
    Answer,
    Scored,
    always,
    cause_rows,
    confusion,
    exported,
    finding_rows,
    ours,
    scored,
    summary,
)
from gputriage.testing.accuracy_tables import block_tables, blocks

ROOT = Path(__file__).parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
MANIFEST = FIXTURES / "cases.toml"
EXAMPLE = ROOT / "benchmarks" / "answers" / "example.json"


def one(i: str, expected: str, named: str | None, kind: str = "trace", left_open: tuple[str, ...] = ()) -> Scored:
    case = Case(id=i, kind=kind, fixture="f", expected=(expected,), why="w", key="k" if kind == "run" else None)
    return Scored(case, kind, None if named is None else Answer(cause=named, left_open=left_open))


def load(i: str, expected: tuple[str, ...], absent: tuple[str, ...], raised: tuple[str, ...] | None) -> Scored:
    case = Case(id=i, kind="load", fixture="f", expected=expected, absent=absent, why="w")
    return Scored(case, "load", None if raised is None else Answer(findings=raised))


def test_precision_counts_the_cases_that_named_a_cause_recall_those_that_expected_it():
    group = [
        one("a", "launch_bound", "launch_bound"),
        one("b", "launch_bound", "input_starved"),
        one("c", "input_starved", "input_starved"),
        one("d", "input_starved", "input_starved"),
        one("e", "compute_bound", "launch_bound"),
    ]
    rows = {r.cause: r for r in cause_rows(group)}
    launch, starved, compute = rows["launch_bound"], rows["input_starved"], rows["compute_bound"]
    assert (launch.expected, launch.named, launch.right) == (2, 2, 1)
    assert launch.precision == 0.5 and launch.recall == 0.5 and launch.f1 == 0.5
    assert starved.precision == pytest.approx(2 / 3) and starved.recall == 1.0 and starved.f1 == 0.8
    assert compute.precision is None and compute.recall == 0.0 and compute.f1 == 0.0  # never named: no precision
    assert [r.cause for r in cause_rows(group)] == ["input_starved", "launch_bound", "compute_bound"]  # vocabulary
    s = summary(group)
    assert (s.cases, s.answered, s.right, s.accuracy) == (5, 5, 3, 0.6)
    assert s.precision == pytest.approx((0.5 + 2 / 3) / 2)  # over the causes named
    assert s.recall == pytest.approx((0.5 + 1.0 + 0.0) / 3)  # over the causes expected
    assert s.f1 == pytest.approx((0.5 + 0.8 + 0.0) / 3)


def test_none_is_a_cause_and_an_unanswered_case_misses_its_recall_without_touching_any_precision():
    group = [
        one("a", "none", "none", kind="run"),
        one("b", "idle", "none", kind="run"),  # a verdict withheld wrongly
        one("c", "idle", None, kind="run"),  # not answered
        one("d", "idle", "idle", kind="run"),
    ]
    rows = {r.cause: r for r in cause_rows(group)}
    assert UNANSWERED not in rows
    assert rows["none"].precision == 0.5 and rows["none"].recall == 1.0
    assert rows["idle"].precision == 1.0 and rows["idle"].recall == pytest.approx(1 / 3)
    m = confusion(group)
    assert m.rows == ["idle", "none"] and m.cols == ["idle", "none", UNANSWERED]
    assert m.counts == {("none", "none"): 1, ("idle", "none"): 1, ("idle", UNANSWERED): 1, ("idle", "idle"): 1}
    assert summary(group).answered == 3 and summary(group).right == 2


def test_a_cause_left_open_is_counted_apart_and_never_as_the_answer():
    group = [
        one("a", "host_bound", "input_starved", left_open=("host_bound",)),
        one("b", "host_bound", "input_starved"),
        one("c", "host_bound", "host_bound", left_open=("input_starved",)),
    ]
    rows = {r.cause: r for r in cause_rows(group)}
    assert rows["host_bound"].right == 1 and rows["host_bound"].left_open == 1  # right ones are not "left open"
    assert rows["input_starved"].left_open == 0 and rows["input_starved"].precision == 0.0


def test_a_load_finding_is_judged_where_its_case_asks_for_it_or_forbids_it_only():
    group = [
        load("a", ("load.queueing",), (), ("load.queueing", "load.server_cpu_bound")),  # the extra: not judged
        load("b", (), ("load.queueing",), ("load.queueing",)),  # a false alarm
        load("c", ("load.errors",), ("load.client_bound",), ()),  # missed
        load("d", ("load.errors",), (), None),  # unanswered: missed, never right
        load("e", (), ("load.queueing",), None),  # unanswered, though nothing was asked of it
    ]
    rows = {r.finding: r for r in finding_rows(group)}
    q = rows["load.queueing"]
    assert (q.must, q.found, q.must_not, q.false_alarms, q.unstated) == (1, 1, 2, 1, 0)
    assert q.precision == 0.5 and q.recall == 1.0
    assert rows["load.server_cpu_bound"].unstated == 1 and rows["load.server_cpu_bound"].precision is None
    assert rows["load.errors"].recall == 0.0 and rows["load.client_bound"].false_alarms == 0
    assert [s.right for s in group] == [True, False, False, False, False]
    s = summary(group)
    assert (s.right, s.answered) == (1, 3)
    assert s.precision == 0.5 and s.recall == pytest.approx(1 / 3)  # summed over the judged findings


def test_a_runs_source_is_the_mode_its_recording_shows():
    run = Case(id="r", kind="run", fixture="f", expected=("idle",), why="w", key="k")
    gpm = {"meta": {"gpus": {"0": {"gpm": True}}}}
    assert source_of(run, {**gpm, "profile": {"mode": "auto"}}) == "run: default"
    assert source_of(run, {**gpm, "profile": {}}) == "run: --profile"  # mode "on" is left out as the default
    assert source_of(run, gpm) == "run: --no-profile"
    assert source_of(run, {"meta": {"gpus": {"0": {"gpm": True}, "1": {"gpm": False}}}}) == "run: --no-gpm"
    assert source_of(run, {**gpm, "kind": "watch"}) == "watch"
    stream = Case(id="s", kind="run", fixture="f", expected=("idle",), why="w", key="k", format="stream")
    assert source_of(stream, {}) == "run: earlier recordings"
    trace = Case(id="t", kind="trace", fixture="f", expected=("idle",), why="w")
    assert source_of(trace) == "trace"


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    return replay(load_manifest(MANIFEST), FIXTURES)


def test_every_recorded_run_has_its_mode_and_the_sources_cover_every_case(outcomes):
    where = sources([o.case for o in outcomes], FIXTURES)
    assert where == {o.case.id: o.where for o in outcomes}  # read without judging, as the replay reads it
    runs = {w for o, w in zip(outcomes, where.values()) if o.case.kind == "run"}
    assert {"run: default", "run: --no-profile", "run: --no-gpm"} <= runs and "run" not in runs
    names = [n for n, _ in blocks(ours(outcomes))]
    assert names[0] == "runs and traces" and "all runs" in names and "trace" in names and "load" in names


def test_our_answers_exported_score_as_our_outcomes(outcomes, tmp_path):
    path = tmp_path / "ours.json"
    path.write_text(json.dumps(exported(outcomes)))
    cases = [o.case for o in outcomes]
    theirs = scored(cases, {o.case.id: o.where for o in outcomes}, json.loads(path.read_text()))
    mine = ours(outcomes)
    assert [(s.named, s.right) for s in theirs] == [(s.named, s.right) for s in mine]
    for (name, a), (_, b) in zip(blocks(theirs), blocks(mine)):
        assert summary(a) == summary(b), name
        assert cause_rows(a) == cause_rows(b) and finding_rows(a) == finding_rows(b), name
    # the tables printed are ours, only the last line says whose
    tables, last = answers_text(theirs, "ours").rstrip().rsplit("\n\n", 1)
    assert tables == text(outcomes).split("\n\nwrong:")[0]
    assert last == f"ours: of {len(cases)} recorded cases, {len(cases)} answered, {sum(s.right for s in mine)} right."


def test_always_naming_the_commonest_cause_recalls_it_all_and_nothing_else(outcomes):
    cases = [o.case for o in outcomes]
    group = always(cases, {o.case.id: o.where for o in outcomes}, "compute_bound")
    runs_traces = [s for s in group if s.case.kind in ("run", "trace")]
    rows = {r.cause: r for r in cause_rows(runs_traces)}
    expecting = sum(s.case.expected[0] == "compute_bound" for s in runs_traces)
    assert rows["compute_bound"].recall == 1.0
    assert rows["compute_bound"].precision == pytest.approx(expecting / len(runs_traces))
    assert all(r.recall == 0.0 for c, r in rows.items() if c != "compute_bound")
    loads = [s for s in group if s.case.kind == "load"]
    assert sum(s.right for s in loads) == sum(not s.case.expected for s in loads)  # no finding: right where none due


def _benchmark():
    spec = importlib.util.spec_from_file_location("accuracy_benchmark", ROOT / "benchmarks" / "accuracy.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_benchmark_scores_an_answers_file_counting_the_cases_it_leaves_out(tmp_path, capsys):
    answers = json.loads(EXAMPLE.read_text())
    cases = load_manifest(MANIFEST)
    page = tmp_path / "example.md"
    assert _benchmark().main(["--answers", str(EXAMPLE), "--markdown", str(page)]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith(f"example: of {len(cases)} recorded cases, {len(answers)} answered, 5 right.")
    starved = next(line for line in out.splitlines() if line.startswith(" 1 input_starved"))
    assert starved.split()[-1] == str(sum(c.expected == ("input_starved",) for c in cases) - 1)  # unanswered
    assert page.read_text().startswith("# Accuracy of example") and "| `trace` | 28 | 2 | 1 |" in page.read_text()


@pytest.mark.parametrize(
    "answers, message",
    [
        ({"runs_typed/nothing": "idle"}, "answers to no case of the manifest: runs_typed/nothing"),
        ({"trace/contended": "slow"}, "'slow' is no cause of a trace"),
        ({"trace/contended": ["contended"]}, "is answered by a cause"),
        ({"trace/contended": {"cause": "contended", "why": "x"}}, "cause and left_open only"),
        ({"load/cpu/load_capped_kv": "load.queueing"}, "is answered by a list of finding ids"),
        (["trace/contended"], "a JSON object of case id"),
    ],
)
def test_an_answers_file_that_is_not_one_is_a_clear_error(tmp_path, capsys, answers, message):
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(answers))
    assert _benchmark().main(["--answers", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_kind_the_tables_do_not_know_is_scored_as_one_cause_in_a_section_of_its_own():
    # a kind added to the manifest (its replay in testing.accuracy) needs nothing here
    group = [
        one("r", "idle", "idle", kind="run"),
        one("t", "idle", "compute_bound", kind="trace"),
        one("m1", "memory.fragmented", "memory.fragmented", kind="memory"),
        one("m2", "memory.growing", "memory.fragmented", kind="memory"),
    ]
    sections = dict(blocks(group))
    assert list(sections) == ["runs and traces", "run", "trace", "memory"]
    assert [s.case.id for s in sections["memory"]] == ["m1", "m2"]
    rows = {r.cause: r for r in cause_rows(sections["memory"])}
    assert rows["memory.fragmented"].precision == 0.5 and rows["memory.growing"].recall == 0.0
    page = "\n".join(block_tables(sections["memory"], md=True))
    assert "| `memory.growing` | 1 |  |" in page  # the matrix: expected growing, named fragmented (first column)
    assert [s.answer for s in always([s.case for s in group], {}, "compute_bound")][2:] == [None, None]
