"""The run's rules (`diagnosis.run.rules`): one module per finding, evaluated by the judge from one evidence object
gathered once; a rule that words a GPU's verdict is stated in the verdict, not among the findings; a rule says what
fixing it recovers; a report stored before the verdict was stated once still shows it once. On H200 recordings."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from msgspec.structs import replace

import gputriage
from gputriage.diagnosis.rule import rules_of
from gputriage.diagnosis.run import gather as gather_module
from gputriage.diagnosis.run.rules import idle_edges, input_rate_bound
from gputriage.diagnosis.run.stated import VerdictRule
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, Severity
from gputriage.model.run import GpuVerdict, RunReport, RunVerdict
from gputriage.testing.recordings import evidence
from recordings import FIXTURES, judged, recorded, runs

RULE_MODULE = """
from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RUN, RunEvidence
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def evaluate(ev: RunEvidence) -> list[Finding]:
    return [
        RULE.finding(
            {"gpus": len(ev.verdicts)}, subject="workload", say="ran", fill={"run_s": ev.run_s}, impact=0.5
        )
    ]


RULE = Rule(
    FindingSpec(
        id="run.every_run",
        step=4,
        severity=Severity.info,
        commands=RUN,
        symptom="A run",
        cause="It ran",
        decision="Nothing",
        says={"ran": Wording(symptom="It ran {run_s:.0f} s")},
    ),
    evaluate,
)
"""
JUDGE_ONE = """
import json, sys
from gputriage.testing.recordings import judged, load_runs
report = judged(load_runs(__import__("pathlib").Path(sys.argv[1]))[sys.argv[2]])
print(json.dumps([[f.id, f.symptom, f.impact, f.verify] for f in report.findings]))
"""


def test_a_rule_module_dropped_into_the_run_rules_is_judged_with_no_other_file_edited(tmp_path: Path) -> None:
    """A copy of the package with one more file in `diagnosis/run/rules`: the judge evaluates it over the run's
    evidence and finishes its finding as every other (its words from its entry, its impact, a verifying command)."""
    copy = tmp_path / "gputriage"
    shutil.copytree(Path(gputriage.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "diagnosis" / "run" / "rules" / "every_run.py").write_text(RULE_MODULE)
    out = subprocess.run(
        [sys.executable, "-c", JUDGE_ONE, str(FIXTURES / "runs_typed.json.gz"), "healthy"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        check=False,
    )
    assert out.returncode == 0, out.stderr
    found = {f[0]: f for f in json.loads(out.stdout)}
    _, symptom, impact, verify = found["run.every_run"]
    assert symptom.startswith("It ran ") and symptom.endswith(" s") and impact == 0.5
    assert verify.startswith("gputriage run -- ")
    assert "run.every_run" not in {f.id for f in judged(runs("runs_typed.json.gz")["healthy"]).findings}


def test_the_evidence_is_gathered_once_per_judgement(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = gather_module.gather

    def counted(*args: object, **kw: object) -> object:
        calls.append(1)
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr("gputriage.diagnosis.run.judge.gather", counted)
    judged(runs("runs_typed.json.gz")["input_starved"])
    assert len(calls) == 1


def test_every_run_finding_but_the_verdicts_is_a_rule_module() -> None:
    ids = {r.id for r in rules_of("run")}
    assert {
        "run.graph_breaks",
        "run.host_iowait",
        "run.host_swapping",
        "run.idle_cuda_context",
        "run.idle_edges",
        "run.idle_held",
        "run.input_rate_bound",
        "run.job_shares_gpu",
        "run.out_of_memory",
        "run.recompiles",
        "run.regime_changed",
        "run.vram_growing",
    } <= ids
    assert not ids & {f"run.{b.value}" for b in B}  # the verdicts are the labels'
    verdict_rules = [r.id for r in rules_of("run") if isinstance(r, VerdictRule)]
    assert verdict_rules == ["run.waits_for_straggler", "run.input_rate_bound"]


PACED = runs("runs_host_side_modes.json.gz")


def test_a_paced_input_is_stated_in_the_verdict_in_its_rules_words_not_among_the_findings() -> None:
    for mode in ("default", "no_profile", "no_gpm"):
        report = judged(PACED[f"paced_queue_service.{mode}"])
        v = report.verdict.per_gpu["0"]
        assert v.finding == "run.input_rate_bound" and v.severity == input_rate_bound.RULE.spec.severity, mode
        util = v.evidence["util_pct"]
        assert v.summary.startswith(f"GPU-Util {util:.0f}% while the main thread waits for input from outside"), mode
        assert v.decision.startswith(f"The input rate is the limit: the GPU has {100 - util:.0f}% headroom"), mode
        assert "run.input_rate_bound" not in {f.id for f in report.findings}, mode
        idle = 1 - v.evidence.get("sm_active_pct", util) / 100
        assert v.impact == pytest.approx(v.share * idle, abs=1e-3), mode  # the rule's own estimate


def test_a_loader_fed_starved_gpu_keeps_its_labels_finding() -> None:
    report = judged(runs("runs_typed.json.gz")["input_starved"])
    v = report.verdict.per_gpu["0"]
    assert v.bottleneck == B.input_starved and v.finding == "run.input_starved"
    assert input_rate_bound.RULE.evaluate(evidence(recorded(runs("runs_typed.json.gz")["input_starved"]))) == []


def test_a_gpu_held_idle_around_the_work_says_the_share_of_the_run_its_fix_recovers() -> None:
    rec = runs("runs_unseen3.json.gz")["offload_layers_gpm"]
    (f,) = [f for f in judged(rec).findings if f.id == "run.idle_edges"]
    e = f.evidence
    assert f.impact == pytest.approx((e["startup_s"] + e["shutdown_s"]) / e["run_s"], abs=1e-3) and f.impact > 0.5
    assert f.symptom == (
        f"GPU 0 held but idle {f.impact:.0%} of the run: {e['startup_s']:.0f} s before its first kernel, "
        f"{e['shutdown_s']:.0f} s after its last"
    )
    watched = recorded({**rec, "kind": "watch"})  # the same GPU watched: no command of gputriage's to start up
    assert idle_edges.RULE.evaluate(evidence(watched)) == []
    assert idle_edges.RULE.spec.severity == Severity.info


def test_a_report_stored_before_the_verdict_was_stated_once_shows_it_once() -> None:
    """Such a report listed the verdict's finding (made from the verdict's own figures) among its findings, and named
    it nowhere in the verdict."""
    v = GpuVerdict(gpu=0, bottleneck=B.input_starved, evidence={"util_pct": 20.0, "sm_active_pct": 11.0})
    blank = Finding(id="", severity=Severity.warn, step=4, symptom="", cause="", decision="", subject="gpu.0")
    said = replace(blank, id="run.input_rate_bound", evidence={**v.evidence, "top_lines": []})
    grows = replace(blank, id="run.vram_growing", evidence={"growth_mib_per_s": 40.0})
    old = RunReport(verdict=RunVerdict(bottleneck=B.input_starved, per_gpu={"0": v}), findings=[said, grows])
    assert [f.id for f in old.beside_verdict()] == ["run.vram_growing"]
    v.finding = "run.input_rate_bound"
    new = RunReport(verdict=RunVerdict(per_gpu={"0": v}), findings=[grows])
    assert [f.id for f in new.beside_verdict()] == ["run.vram_growing"]
    elsewhere = RunVerdict(per_gpu={"1": replace(v, gpu=1)})  # another GPU's verdict states nothing of GPU 0's
    assert [f.id for f in RunReport(verdict=elsewhere, findings=[said]).beside_verdict()] == ["run.input_rate_bound"]
