"""`gputriage memory FILE`: the verdict and the lines in the terminal, `--json` (its schema) and the HTML report;
exit codes as docs/reference.md documents them."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).parent.parent
BUILT = Path(__file__).parent / "fixtures" / "memory" / "built"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gputriage", *args], capture_output=True, text=True, timeout=120, env=None
    )


def test_the_terminal_names_the_cause_the_line_that_asked_and_the_top_lines():
    out = run("memory", str(BUILT / "peak.pickle"))
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "verdict: memory.peak_near_capacity" in text
    assert "asked at built/peak.py:33" in text and "the optimizer's first step" in text
    top = text.split("Top live allocations by Python line", 1)[1]
    assert top.index("built/peak.py:33") < top.index("built/peak.py:20")


def test_json_follows_the_schema_and_round_trips_to_the_html_report(tmp_path):
    out = run("memory", "--json", str(BUILT / "other_process.pickle"))
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    jsonschema.validate(data, json.loads((ROOT / "schemas" / "memory.schema.json").read_text()))
    assert data["cause"] == "memory.other_process"
    assert data["state"]["processes"][0]["pid"] in (4100, 4242)
    saved = tmp_path / "memory.json"
    saved.write_text(out.stdout)
    page = tmp_path / "page.html"
    done = run("report", str(saved), "-o", str(page))
    assert done.returncode == 0, done.stderr
    assert "memory.other_process" in page.read_text()


def test_the_html_report_of_a_snapshot_draws_the_live_memory_by_line_and_the_segment_map(tmp_path):
    page = tmp_path / "page.html"
    done = run("report", str(BUILT / "growing.pickle"), "-o", str(page))
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    charts = json.loads(html.split('id="gt-data">', 1)[1].split("</script>", 1)[0].replace("<\\/", "</"))["charts"]
    (timeline,) = charts
    labels = [s["label"] for s in timeline["series"]]
    assert labels[0] == "live, all lines" and "built/growing.py:35" in labels
    assert html.count('class="stack"') >= 48  # a bar per segment drawn
    assert "Lines whose live bytes grew" in html


def test_a_gzipped_snapshot_reads_the_same(tmp_path):
    packed = tmp_path / "snap.pickle.gz"
    packed.write_bytes(gzip.compress((BUILT / "fragmented.pickle").read_bytes()))
    out = run("memory", "--json", str(packed))
    assert out.returncode == 0, out.stderr
    # without its marker beside it: the error as the history recorded it
    assert json.loads(out.stdout)["cause"] == "memory.fragmented"


def test_fail_on_critical_exits_1():
    assert run("memory", "--fail-on", "critical", str(BUILT / "too_large.pickle")).returncode == 1


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["memory", "/nonexistent/snap.pickle"], 3, "no such file"),
        (["memory", str(ROOT / "pyproject.toml")], 3, "not a pickle"),
        (["memory", "--device", "5", str(BUILT / "peak.pickle")], 2, "no device 5"),
    ],
)
def test_bad_input_is_one_line_with_its_code(args, code, says):
    out = run(*args)
    assert out.returncode == code and says in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_a_snapshot_renamed_with_its_marker_keeps_what_run_saw(tmp_path):
    for suffix in (".pickle", ".json", ".processes.json"):
        shutil.copy(BUILT / f"other_process{suffix}", tmp_path / f"oom{suffix}")
    data = json.loads(run("memory", "--json", str(tmp_path / "oom.pickle")).stdout)
    assert data["state"]["other_processes_bytes"] == 40 << 30
    packed = tmp_path / "oom.pickle.gz"  # gzipped to keep: its marker still found
    packed.write_bytes(gzip.compress((tmp_path / "oom.pickle").read_bytes()))
    (tmp_path / "oom.pickle").unlink()
    data = json.loads(run("memory", "--json", str(packed)).stdout)
    assert data["cause"] == "memory.other_process" and data["state"]["other_processes_bytes"] == 40 << 30
    (tmp_path / "oom.processes.json").unlink()  # the processes not read: the other job is not seen
    data = json.loads(run("memory", "--json", str(packed)).stdout)
    assert data["state"]["other_processes_bytes"] is None and data["cause"] != "memory.other_process"
