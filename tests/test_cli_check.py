"""The check, snapshot and rules commands end to end: exit codes, --from replay, bad files."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import H200_SNAPSHOT

GT = [sys.executable, "-m", "gputriage"]


def run(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(GT + list(args), capture_output=True, text=True, timeout=120, **kw)


def test_replay_of_a_recorded_h200_gives_the_same_findings_every_time(tmp_path):
    first = json.loads(run("check", "--from", str(H200_SNAPSHOT), "--json", "--fail-on", "never").stdout)
    again = json.loads(run("check", "--from", str(H200_SNAPSHOT), "--json", "--fail-on", "never").stdout)
    assert first["findings"] == again["findings"]
    assert first["schema"] == "gputriage.check" and first["version"] == 1
    assert first["facts"]["gpu.0.name"] == "NVIDIA H200"
    for f in first["findings"]:
        assert set(f) >= {"id", "severity", "step", "symptom", "cause", "decision", "evidence"}


def test_check_on_this_machine_runs_without_a_traceback():
    r = run("check", "--no-framework", "--window", "0.2", "--fail-on", "never", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert "Traceback" not in r.stderr
    assert report["facts"]["host.cpu.count"] >= 1


def test_fail_on_sets_the_exit_code(tmp_path):
    snap = json.loads(H200_SNAPSHOT.read_text())
    for fact in snap["facts"]:
        if fact["name"] == "gpu.0.ecc.volatile_uncorrected":
            fact["value"] = 3
    bad = tmp_path / "ecc.json"
    bad.write_text(json.dumps(snap))
    assert run("check", "--from", str(bad)).returncode == 1
    assert run("check", "--from", str(bad), "--fail-on", "never").returncode == 0
    healthy = run("check", "--from", str(H200_SNAPSHOT), "--fail-on", "critical")
    assert healthy.returncode == 0, healthy.stdout


def test_corrupt_truncated_and_foreign_files_are_one_line_errors_with_exit_3(tmp_path):
    cases = {
        "truncated.json": H200_SNAPSHOT.read_text()[:500],
        "foreign.json": json.dumps({"traceEvents": []}),
        "binary.json": "\x00\x01garbage",
        "newer.json": json.dumps({"schema": "gputriage.snapshot", "version": 99, "facts": []}),
    }
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text)
        r = run("check", "--from", str(path))
        assert r.returncode == 3, (name, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    r = run("check", "--from", str(tmp_path / "missing.json"))
    assert r.returncode == 3 and "no such file" in r.stderr


def test_markdown_report_has_the_five_steps():
    r = run("check", "--from", str(H200_SNAPSHOT), "--markdown")
    for step in ("1. Is the GPU actually used?", "5. Platform integrity"):
        assert step in r.stdout


def test_rules_catalog_json():
    r = run("rules", "--json")
    rules = json.loads(r.stdout)["rules"]
    assert len(rules) >= 90
    assert len({x["id"] for x in rules}) == len(rules)
    for rule in rules:
        assert 1 <= rule["step"] <= 5 and rule["decision"] and rule["condition"] and rule["commands"]


def test_snapshot_then_replay(tmp_path):
    out = tmp_path / "snap.json"
    r = run("snapshot", "-o", str(out), "--window", "0.2")
    assert r.returncode == 0, r.stderr
    live = json.loads(run("check", "--from", str(out), "--json", "--fail-on", "never").stdout)
    again = json.loads(run("check", "--from", str(out), "--json", "--fail-on", "never").stdout)
    assert live["findings"] == again["findings"]


def test_unknown_severity_is_a_usage_error():
    assert run("check", "--from", str(H200_SNAPSHOT), "--fail-on", "sometimes").returncode == 2


def test_check_full_runs_the_quick_disk_probes(tmp_path):
    r = subprocess.run(
        GT + ["check", "--full", "--no-framework", "--window", "0.2", "--fail-on", "never", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    facts = json.loads(r.stdout)["facts"]
    assert facts["host.fs.cwd.seq_read_mbps"] > 0 and facts["host.fs.cwd.rand_read_4k_iops"] > 0
    assert list(tmp_path.iterdir()) == []  # the probe file is gone
