"""The accuracy harness: every recorded case (tests/fixtures/cases.toml) replayed through today's rules. A case
right in the committed baseline must stay right; the manifest lists every recording; docs/accuracy.md is fresh."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from gputriage.testing.accuracy import (
    Case,
    ManifestError,
    Outcome,
    load_baseline,
    load_manifest,
    regressions,
    replay,
)
from gputriage.testing.accuracy_page import markdown, text
from gputriage.testing.recordings import load_runs

ROOT = Path(__file__).parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
MANIFEST = FIXTURES / "cases.toml"
BASELINE = FIXTURES / "accuracy_baseline.json"
PAGE = ROOT / "docs" / "accuracy.md"


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    return replay(load_manifest(MANIFEST), FIXTURES)


def test_every_case_right_in_the_baseline_is_still_right(outcomes):
    lost = regressions(outcomes, load_baseline(BASELINE))
    assert not lost, "\n".join(lost)


def test_the_accuracy_page_is_generated_from_todays_outcomes(outcomes):
    assert PAGE.read_text() == markdown(outcomes), (
        "docs/accuracy.md is stale: run `python benchmarks/accuracy.py --markdown docs/accuracy.md`"
    )


def test_the_manifest_lists_every_recorded_run_trace_and_load_test():
    listed = {(c.fixture, c.key) for c in load_manifest(MANIFEST)}
    recorded = set()
    for path in (
        sorted(FIXTURES.glob("h*/runs_*.json.gz"))
        + sorted(FIXTURES.glob("ranks/runs_*"))
        + [
            FIXTURES / "h200" / "run_samples.json.gz",
            FIXTURES / "h200" / "scenario_samples.json",
        ]
    ):
        recorded |= {(str(path.relative_to(FIXTURES)), key) for key in load_runs(path)}
    for path in sorted(FIXTURES.glob("h200/traces/*.json.gz")) + sorted(FIXTURES.glob("*/load_*.json")):
        recorded.add((str(path.relative_to(FIXTURES)), None))
    for path in sorted(FIXTURES.glob("memory/*/*.pickle")) + sorted(FIXTURES.glob("memory/*/*.pickle.gz")):
        recorded.add((str(path.relative_to(FIXTURES)), None))
    assert recorded - listed == set(), "recorded but not in tests/fixtures/cases.toml"
    assert listed - recorded == set(), "in tests/fixtures/cases.toml but not recorded"
    assert len(listed) >= 250


def test_a_case_that_was_right_and_goes_wrong_is_named_with_what_it_expected_and_got():
    case = Case(
        id="runs_x/healthy",
        kind="run",
        fixture="h200/runs_x.json.gz",
        key="healthy",
        expected=("compute_bound",),
        why="bf16 GEMMs",
    )
    lost = regressions([Outcome(case, "memory_bound", False)], {"runs_x/healthy", "runs_x/gone"})
    assert lost == [
        "runs_x/gone: in the accuracy baseline but not in the manifest",
        "runs_x/healthy was right and is wrong: expected compute_bound, got memory_bound",
    ]
    assert regressions([Outcome(case, "compute_bound", True)], {"runs_x/healthy"}) == []
    assert regressions([Outcome(case, "memory_bound", False)], set()) == []  # wrong before too: reported, no failure


def _benchmark():
    spec = importlib.util.spec_from_file_location("accuracy_benchmark", ROOT / "benchmarks" / "accuracy.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _one_load(tmp_path: Path, expected: str, absent: str = "") -> Path:
    (tmp_path / "cpu").mkdir(exist_ok=True)
    shutil.copy(FIXTURES / "cpu" / "load_capped_kv.json", tmp_path / "cpu" / "load_capped_kv.json")
    manifest = tmp_path / "cases.toml"
    manifest.write_text(
        '[[case]]\nid = "load/cpu/load_capped_kv"\nkind = "load"\n'
        'fixture = "cpu/load_capped_kv.json"\n'
        f'expected = [{expected}]\nabsent = [{absent}]\nwhy = "a KV cache of 64 tokens"\n'
    )
    return manifest


def test_the_benchmark_exits_1_only_when_a_case_right_before_goes_wrong(tmp_path, capsys):
    bench = _benchmark()
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"right": ["load/cpu/load_capped_kv"]}))
    right = _one_load(tmp_path, '"load.queueing"')
    assert bench.main(["--manifest", str(right), "--baseline", str(baseline)]) == 0
    out = capsys.readouterr().out
    assert "Of 1 recorded cases, 1 right" in out
    assert next(line for line in out.splitlines() if line.startswith("load.queueing")).split()[1:5] == [
        "1",
        "1",
        "0",
        "0",
    ]
    wrong = _one_load(tmp_path, '"load.queueing"', '"load.queueing"')  # asks for what it must not raise
    assert bench.main(["--manifest", str(wrong), "--baseline", str(baseline)]) == 1
    captured = capsys.readouterr()
    assert "load/cpu/load_capped_kv was right and is wrong" in captured.err
    assert "load.queueing raised" in captured.out
    assert next(line for line in captured.out.splitlines() if line.startswith("load.queueing")).split()[1:5] == [
        "1",
        "1",
        "1",
        "1",
    ]  # must raise, found, must not, false alarms
    page = tmp_path / "accuracy.md"
    assert (
        bench.main(
            ["--manifest", str(wrong), "--baseline", str(baseline), "--update-baseline", "--markdown", str(page)]
        )
        == 0
    )
    assert json.loads(baseline.read_text()) == {"right": []} and "## Wrong cases" in page.read_text()


@pytest.mark.parametrize(
    "body, message",
    [
        ('[[case]]\nid = "a"\nkind = "video"\nfixture = "x"\nexpected = "idle"\nwhy = "w"\n', "kind 'video'"),
        ('[[case]]\nid = "a"\nkind = "trace"\nfixture = "x"\nexpected = "slow"\nwhy = "w"\n', "no bottleneck"),
        ('[[case]]\nid = "a"\nkind = "run"\nfixture = "x"\nexpected = "idle"\nwhy = "w"\n', "key of its run"),
        ('[[case]]\nid = "a"\nkind = "trace"\nfixture = "x"\nexpected = "idle"\n', "'why'"),
        (
            '[[case]]\nid = "a"\nkind = "trace"\nfixture = "x"\nexpected = "idle"\nwhy = "w"\nexpect = 1\n',
            "unknown fields expect",
        ),
        ("", "holds no [[case]]"),
        ("[[case]\n", "cannot read the manifest"),
    ],
)
def test_a_manifest_that_is_not_one_is_a_clear_error(tmp_path, body, message):
    path = tmp_path / "cases.toml"
    path.write_text(body)
    with pytest.raises(ManifestError, match=message.replace("[", r"\[")):
        load_manifest(path)


def test_a_case_whose_fixture_or_run_is_missing_is_a_clear_error(tmp_path):
    case = Case(
        id="runs_typed/nothing",
        kind="run",
        fixture="h200/runs_typed.json.gz",
        key="nothing",
        expected=("idle",),
        why="w",
    )
    with pytest.raises(ManifestError, match="holds no run 'nothing'"):
        replay([case], FIXTURES)
    with pytest.raises(ManifestError, match="no fixture"):
        replay([case], tmp_path)


def test_a_run_right_in_its_cause_but_missing_a_finding_is_wrong_by_the_finding():
    case = Case(
        id="runs_x/vram_leak",
        kind="run",
        fixture="f",
        key="vram_leak",
        expected=("compute_bound",),
        why="predictions kept on the GPU",
        findings=("run.vram_growing",),
    )
    outcomes = [Outcome(case, "compute_bound", False, ["run.vram_growing not raised"])]
    table = text(outcomes)
    assert "runs_x/vram_leak: expected compute_bound, got compute_bound (run.vram_growing not raised)" in table
    assert table.rstrip().endswith(
        "Of 1 recorded cases, 0 right (runs 0/1, traces 0/0, loads 0/0, memory snapshots 0/0, multi-rank runs 0/0)."
    )
    row = next(line for line in table.splitlines() if line.startswith("compute_bound"))
    assert row.split()[1:4] == ["1", "1", "1"]  # the cause tables count the cause alone
    assert "1 name the right cause without one" in markdown(outcomes)
