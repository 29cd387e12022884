"""`load`'s rules as the contract has them: a module per `load.*` finding over one evidence object, thresholds named
in the catalog's words, and the judge finishing its findings as every judge does (the command that verifies a fix,
the triage order)."""

from __future__ import annotations

from gputriage.diagnosis import catalog
from gputriage.diagnosis.rule import rules_of
from gputriage.diagnosis.serving.judge import findings, judge
from gputriage.diagnosis.serving.rules.errors import ERRORS_CRITICAL
from gputriage.diagnosis.serving.rules.gpu_underfilled import SCALING, UNDERFILLED_ACTIVE
from gputriage.model.finding import Severity, triage_order
from gputriage.model.load import (
    GpuDuring,
    LoadMeasurement,
    LoadMeta,
    LoadStep,
    RequestRecord,
    StepRecord,
)


def test_every_load_finding_is_a_module_of_the_serving_rules() -> None:
    ids = {s.id for r in rules_of("serving") for s in r.specs}
    assert ids == {i for i in catalog.entries() if i.startswith("load.")} and len(ids) == 12
    assert all(s.commands == ("load",) for r in rules_of("serving") for s in r.specs)


def _pair(gain: float) -> list[LoadStep]:
    idle = [GpuDuring(gpu=0, sm_active_pct=UNDERFILLED_ACTIVE.value / 2)]
    return [
        LoadStep(concurrency=1, requests=8, ok=8, output_tokens_per_s=100.0, gpus=idle),
        LoadStep(concurrency=2, requests=8, ok=8, output_tokens_per_s=100.0 * gain, gpus=idle),
    ]


def test_the_underfilled_gpu_turns_at_its_named_scaling() -> None:
    """The condition names its scaling as a field (the catalog writes its value); the verdict turns there."""
    raw = catalog.raw_entries()["load.gpu_underfilled"]
    assert "{throughput_scaling:g}" in raw.condition and not raw.hand_written()
    assert f"x >= {SCALING.value:g}" in catalog.entries()["load.gpu_underfilled"].condition
    assert "load.gpu_underfilled" in {f.id for f in findings(_pair(SCALING.value))}
    assert "load.gpu_underfilled" not in {f.id for f in findings(_pair(SCALING.value * 0.95))}


def _step(concurrency: int, t0: float, failed: int, client_cpu_s: float) -> StepRecord:
    """Eight requests of 11 chunks a second apart from `t0`, `failed` of them HTTP 500."""
    records = [
        RequestRecord(
            sent_s=t0,
            first_s=t0 + 0.1,
            end_s=t0 + 1.1,
            chunk_s=[t0 + 0.1 + 0.1 * k for k in range(11)],
            output_tokens=11,
        )
        for _ in range(8 - failed)
    ] + [RequestRecord(sent_s=t0, end_s=t0 + 0.2, error="http_500") for _ in range(failed)]
    return StepRecord(concurrency, None, t0, t0 + 2.0, records, client_cpu_s)


def test_the_judge_finishes_its_findings_with_their_verification_in_triage_order() -> None:
    """Half the requests of the second step fail (critical, triage step 5) while the generator's loop is at a full
    core (step 4): the report lists step 4 first, each with the command that measures the fix."""
    m = LoadMeasurement(
        meta=LoadMeta(url="http://h:8000"),
        started_s=0.0,
        load_t0_s=0.0,
        unix_offset_s=0.0,
        steps=[_step(1, 0.0, 0, 0.2), _step(2, 2.0, 4, 2.0)],
    )
    report = judge(m, load_args=["http://h:8000", "--concurrency", "1,2"])
    ids = [f.id for f in report.findings]
    assert ids == ["load.client_bound", "load.errors"] and report.findings == triage_order(report.findings)
    errors = report.findings[1]
    assert ERRORS_CRITICAL.value <= 4 / 8 and errors.severity is Severity.critical
    assert errors.symptom == "50% of requests failed at concurrency 2" and "HTTP 500" in errors.cause
    assert {f.verify for f in report.findings} == {"gputriage load http://h:8000 --concurrency 1,2"}
    assert {f.verify for f in judge(m).findings} == {"gputriage load http://h:8000"}
