"""The catalog holds every finding any command can emit; every report validates against its
published JSON Schema; the library API is what the CLI prints."""

from __future__ import annotations

import gzip
import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import msgspec
import pytest

import gputriage.diagnosis
from conftest import H200_SNAPSHOT, judged
from gputriage import api
from gputriage.diagnosis import catalog
from gputriage.diagnosis.budget import load_budget
from gputriage.model.finding import Finding, FindingSpec
from gputriage.model.probe import ProbeResult
from gputriage.model.schemas import REPORTS, schema
from gputriage.testing.recorded import from_flat_rows, from_untyped

ROOT = Path(__file__).parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "h200"
GT = [sys.executable, "-m", "gputriage"]


def test_the_catalog_lists_every_command_s_findings():
    entries = catalog.entries()
    assert len(entries) >= 90
    for prefix in ("run.", "trace.", "bench.", "budget."):
        assert any(i.startswith(prefix) for i in entries), prefix
    for spec in entries.values():
        assert 1 <= spec.step <= 5 and spec.symptom and spec.cause and spec.decision and spec.condition
        assert set(spec.commands) <= set(catalog.COMMANDS) and spec.commands
        for t in spec.thresholds:
            assert t.meaning and t.source, (spec.id, t.name)


def test_every_finding_declared_anywhere_is_in_the_catalog():
    declared = set()
    for mod in pkgutil.walk_packages(gputriage.diagnosis.__path__, "gputriage.diagnosis."):
        module = importlib.import_module(mod.name)
        for value in vars(module).values():
            specs = value.values() if isinstance(value, dict) else value if isinstance(value, tuple) else [value]
            declared |= {s.id for s in specs if isinstance(s, FindingSpec)}
            if hasattr(value, "specs") and not isinstance(value, type):
                declared |= {s.id for s in value.specs}
    assert declared and declared <= set(catalog.entries())


def _in_catalog(findings: list[Finding], command: str) -> None:
    for f in findings:
        spec = catalog.lookup(f.id)
        assert spec is not None, f"{command} emitted {f.id}, which is not in the catalog"
        assert command in spec.commands and f.step == spec.step, (f.id, command)


def test_what_each_command_emits_is_in_the_catalog(tmp_path):
    # check: the recorded H200, then every rule's own fault (test_rules_catalog fires each one)
    _in_catalog(api.check(H200_SNAPSHOT).findings, "check")
    budget = tmp_path / "b.toml"
    budget.write_text(
        "[budget]\nvram_headroom_pct = 99.9\nmax_temperature_c = 20\nmax_power_pct_of_limit = 1\n"
        "min_sm_active_pct = 99\nmax_throttled_pct = 0\nmax_iowait_pct = 0\n"
    )
    _in_catalog(api.check(H200_SNAPSHOT, budget=budget).findings, "check")
    # trace: every recorded H200 trace
    for path in sorted((FIXTURES / "traces").glob("*.json.gz")):
        _in_catalog(api.analyze_trace([path]).findings, "trace")
    # run: every recorded stream and run, with a budget that every one of them breaks
    limits = load_budget(budget)
    scenarios = json.loads((FIXTURES / "scenario_samples.json").read_text())
    runs = json.loads(gzip.decompress((FIXTURES / "run_samples.json.gz").read_bytes()))
    recorded = [from_flat_rows(s["samples"]) for s in scenarios.values()]
    recorded += [from_untyped(r["samples"]) for r in runs.values()]
    emitted = set()
    for samples in recorded:
        report = judged(samples, budget=limits)
        _in_catalog(report.findings, "run")
        emitted |= {f.id for f in report.findings}
        emitted |= {v.finding for v in report.verdict.per_gpu.values() if v.finding}  # the verdict's own entry
    assert {"run.compute_bound", "run.underfilled", "budget.min_sm_active_pct"} <= emitted
    # bench: a healthy recording, then a slow one on a shared GPU
    from gputriage.diagnosis.bench import findings

    data = json.loads((FIXTURES / "bench_h200.json").read_text())
    results = [
        msgspec.convert({k: r[k] for k in ("name", "value", "unit", "reference", "conditions", "detail")}, ProbeResult)
        for r in data["results"]
    ]
    slow = [msgspec.structs.replace(r, value=r.value / 4) for r in results]
    _in_catalog(findings(slow, (5, 16), [{"gpu": 0, "pid": 1, "used_bytes": 1}]), "bench")


def test_rules_filters_by_command_and_looks_up_an_id():
    r = subprocess.run(GT + ["rules", "--json", "--command", "trace"], capture_output=True, text=True)
    ids = [x["id"] for x in json.loads(r.stdout)["rules"]]
    assert ids and all("trace" in catalog.lookup(i).commands for i in ids) and "pcie.link_width_degraded" not in ids
    r = subprocess.run(GT + ["rules", "run.underfilled"], capture_output=True, text=True)
    assert r.returncode == 0 and "underfilled_sm_active_pct" in r.stdout and "1 findings" in r.stdout
    assert subprocess.run(GT + ["rules", "no.such"], capture_output=True, text=True).returncode == 3
    assert subprocess.run(GT + ["rules", "--command", "nope"], capture_output=True, text=True).returncode == 2


def test_check_and_the_classifier_read_the_same_thresholds():
    from gputriage.diagnosis.check.rules import util_underfilled, vram_nearly_full
    from gputriage.diagnosis.run import classify
    from gputriage.diagnosis.thresholds import UNDERFILLED_SM, UNDERFILLED_UTIL, VRAM_PRESSURE

    assert {UNDERFILLED_UTIL, UNDERFILLED_SM} <= set(util_underfilled.RULE.spec.thresholds)
    assert {UNDERFILLED_UTIL, UNDERFILLED_SM} <= set(classify.LABEL_THRESHOLDS[classify.B.underfilled])
    assert VRAM_PRESSURE in vram_nearly_full.RULE.spec.thresholds
    assert VRAM_PRESSURE in classify.LABEL_THRESHOLDS[classify.B.vram_pressure]
    # input_starved is a step of the input pipeline wherever it is seen
    assert catalog.lookup("run.input_starved").step == catalog.lookup("trace.input_starved").step == 4


@pytest.mark.parametrize("kind", sorted(REPORTS))
def test_the_published_schemas_are_the_types(kind):
    published = json.loads((ROOT / "schemas" / f"{kind}.schema.json").read_text())
    assert published == json.loads(json.dumps(schema(kind))), (
        f"schemas/{kind}.schema.json is stale: python -m gputriage.model.schemas schemas"
    )


def _valid(kind: str, document: dict) -> None:
    jsonschema.validate(document, json.loads((ROOT / "schemas" / f"{kind}.schema.json").read_text()))
    assert document["schema"] == f"gputriage.{kind}"


def test_every_command_s_json_validates(tmp_path):
    def out(*args: str) -> dict:
        return json.loads(subprocess.run(GT + list(args), capture_output=True, text=True, cwd=ROOT).stdout)

    _valid("check", out("check", "--from", str(H200_SNAPSHOT), "--json", "--fail-on", "never"))
    _valid("trace", out("trace", str(FIXTURES / "traces" / "item_sync.json.gz"), "--json"))
    _valid("rules", out("rules", "--json"))
    _valid("bench", out("bench", "--no-disk", "--json", "--store", str(tmp_path / "b.sqlite")))
    store = str(tmp_path / "s.sqlite")
    ran = out("run", "--store", store, "--json", "--", sys.executable, "-c", "import time; time.sleep(1)")
    _valid("run", ran)
    shown = out("show", str(ran["id"]), "--store", store, "--json")
    assert shown == ran  # `run --json` and `show --json` are the same document
    runs = json.loads(
        (FIXTURES / "run_samples.json.gz").read_bytes()
        and gzip.decompress((FIXTURES / "run_samples.json.gz").read_bytes())
    )
    _valid("run", msgspec.to_builtins(judged(from_untyped(runs["item_sync"]["samples"]))))
    for recorded in sorted((FIXTURES.parent / "cpu").glob("load_*.json")):  # what `load --json` printed
        _valid("load", json.loads(recorded.read_text()))


def test_the_library_api_is_the_cli():
    import gputriage

    for name in ("analyze_trace", "monitor", "check", "run"):
        assert callable(getattr(gputriage, name))
    report = gputriage.analyze_trace([FIXTURES / "traces" / "healthy.json.gz"])
    printed = subprocess.run(
        GT + ["trace", str(FIXTURES / "traces" / "healthy.json.gz"), "--json"], capture_output=True, text=True
    ).stdout
    mine = msgspec.to_builtins(report)
    theirs = json.loads(printed)
    for r in (mine, theirs):  # the time each took to read is the only difference
        for rank in r["ranks"]:
            rank.pop("analysis_s")
    assert mine == theirs


def test_monitor_samples_a_block_of_the_callers_code():
    import time

    import gputriage

    with gputriage.monitor(period_s=0.05) as m:
        t = time.time()
        while time.time() - t < 1.5:
            sum(i * i for i in range(10000))  # the caller's own work, on its own thread
    assert m.report is not None and m.report.kind == "monitor" and m.report.samples >= 10
    assert m.report.host.workload_cpu_pct is not None and m.report.host.workload_cpu_pct > 0  # a share of a core
