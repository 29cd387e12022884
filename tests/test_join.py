"""`gputriage join`: one job's ranks from the records its nodes kept — report files, a shared folder, run stores —
compared again and judged as one job (tests/fixtures/ranks/join: a 2-rank gloo job run as two nodes, one rank each,
rank 1's loader sleeping)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import msgspec
import pytest

from gputriage.api import UsageError
from gputriage.api.join import join
from gputriage.model.run import RunReport
from gputriage.sampling.store import Store

NODES = Path(__file__).parent / "fixtures" / "ranks" / "join"
ROOT = Path(__file__).parent.parent
GT = [sys.executable, "-m", "gputriage"]


def node(n: int) -> RunReport:
    return msgspec.json.decode((NODES / f"node{n}.json").read_bytes(), type=RunReport)


def test_each_node_alone_has_one_rank_and_no_straggler_and_says_to_join():
    for n in (0, 1):
        ranks = node(n).ranks
        assert ranks is not None and [r.rank for r in ranks.per_rank] == [n] and ranks.straggler is None
        assert ranks.job_id == "job42" and any("gputriage join" in note for note in ranks.notes)


def test_joined_the_nodes_records_name_the_straggler_and_its_loaders_line(tmp_path: Path):
    report = join([NODES / "node0.json", NODES / "node1.json"])
    assert report.job_id == "job42" and [r.rank for r in report.ranks.per_rank] == [0, 1]
    assert report.ranks.stragglers == [1] and report.ranks.straggler is not None and report.ranks.straggler.chronic
    (f,) = report.findings
    assert (f.id, f.subject) == ("run.straggler_input", "rank.1") and "_ddp.py:76" in f.evidence["line"]
    shared = tmp_path / "shared"  # the nodes wrote to one folder
    (shared / "a").mkdir(parents=True)
    shutil.copy(NODES / "node0.json", shared / "a" / "n0.json")
    shutil.copy(NODES / "node1.json", shared / "n1.json")
    (shared / "notes.json").write_text('{"not": "a run"}')
    again = join([shared])
    assert again.ranks.stragglers == [1] and len(again.sources) == 2 and any("left out" in n for n in again.notes)


def test_a_run_store_is_a_record_too(tmp_path: Path):
    db = Store(tmp_path / "node1.sqlite")
    r = node(1)
    r.id = db.begin_run("run", r.command, r.meta)
    db.end_run(r)
    db.close()
    report = join([NODES / "node0.json", tmp_path / "node1.sqlite"])
    assert report.ranks.stragglers == [1] and report.sources[1] == f"{tmp_path / 'node1.sqlite'}#{r.id}"


def test_records_of_several_jobs_need_the_job_named(tmp_path: Path):
    other = node(0)
    assert other.ranks is not None
    other.ranks.job_id = "job7"
    (tmp_path / "other.json").write_bytes(msgspec.json.encode(other))
    paths = [NODES / "node0.json", NODES / "node1.json", tmp_path / "other.json"]
    with pytest.raises(UsageError, match="2 jobs"):
        join(paths)
    assert join(paths, job_id="job42").ranks.stragglers == [1]
    assert [r.rank for r in join(paths, job_id="job7").ranks.per_rank] == [0]
    with pytest.raises(UsageError, match="no record of job job9"):
        join(paths, job_id="job9")


def test_the_command_prints_the_joined_report_its_json_valid_against_its_schema():
    out = subprocess.run(GT + ["join", str(NODES), "--json"], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    document = json.loads(out.stdout)
    jsonschema.validate(document, json.loads((ROOT / "schemas" / "join.schema.json").read_text()))
    assert document["schema"] == "gputriage.join" and document["ranks"]["stragglers"] == [1]
    text = subprocess.run(GT + ["join", str(NODES)], capture_output=True, text=True, check=False)
    assert "straggler: rank 1" in text.stdout and "run.straggler_input" in text.stdout
    missing = subprocess.run(GT + ["join", str(ROOT / "nowhere")], capture_output=True, text=True, check=False)
    assert missing.returncode == 2 and "no such file or folder" in missing.stderr
