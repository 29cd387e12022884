"""`gputriage run` of real 2-rank torchrun jobs with gloo on CPU cores (examples/distributed): the straggler named
with its loader's line, a healthy job naming none, a hang said while the job still runs. The planted causes are
large against the noise of loaded cores (a 100 ms sleep a step, a 15 s hang); the other causes are judged from their
recordings (tests/test_stragglers.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).parent.parent / "examples" / "distributed"
TORCHRUN = Path(sys.executable).with_name("torchrun")
pytestmark = pytest.mark.skipif(not TORCHRUN.exists(), reason="no torchrun beside this Python")


def planted(example: str) -> int:
    """The line of `_ddp.py` that plants `example`'s cause (its comment names the example)."""
    lines = (EXAMPLES / "_ddp.py").read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if f"# the planted cause of {example}" in text)


def run(example: str, *args: str, gputriage: tuple[str, ...] = ()) -> tuple[dict[str, Any], str]:
    """`gputriage run --json -- torchrun --standalone --nproc_per_node 2 EXAMPLE --backend gloo ARGS`: its report
    and its stderr (where the job's own output goes)."""
    cmd = [sys.executable, "-m", "gputriage", "run", "--no-store", "--json", *gputriage, "--", str(TORCHRUN)]
    cmd += ["--standalone", "--nproc_per_node", "2", str(EXAMPLES / example), "--backend", "gloo", *args]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout), out.stderr


def said(report: dict[str, Any]) -> str:
    """What the run said about its ranks, for a failure's message."""
    ranks = report.get("ranks") or {}
    rows = [
        (r["rank"], r.get("steps"), {k: round(v, 2) for k, v in r["shares"].items() if v}) for r in ranks["per_rank"]
    ]
    return f"{rows} {ranks.get('straggler')} {ranks.get('notes')} {[f['id'] for f in report['findings']]}"


def test_the_rank_whose_loader_sleeps_is_named_with_its_loaders_line():
    report, _ = run("slow_loader.py", "--seconds", "10", "--pace-s", "0.02", "--plant-s", "0.1")
    ranks = report["ranks"]
    assert ranks["stragglers"] == [1] and ranks["straggler"]["chronic"], said(report)
    (f,) = [f for f in report["findings"] if f["id"].startswith("run.straggler")]
    assert (f["id"], f["subject"]) == ("run.straggler_input", "rank.1")
    assert f["evidence"]["line"].startswith(f"{EXAMPLES / '_ddp.py'}:{planted('slow_loader.py')} ")  # the planted sleep
    assert [r["rank"] for r in ranks["per_rank"]] == [0, 1]


def test_a_healthy_job_names_no_straggler():
    report, _ = run("healthy.py", "--seconds", "10", "--pace-s", "0.05")
    assert report["ranks"]["stragglers"] == [] and len(report["ranks"]["per_rank"]) == 2, said(report)
    assert not [f for f in report["findings"] if f["id"].startswith("run.straggler")]


def test_a_hang_is_said_with_the_missing_ranks_stack_while_the_job_runs():
    report, stderr = run(
        "hang.py", "--seconds", "6", "--pace-s", "0.02", "--plant-s", "15", gputriage=("--hang-after", "3")
    )
    said = [i for i, line in enumerate(stderr.splitlines()) if line.startswith("gputriage: hang")]
    done = [i for i, line in enumerate(stderr.splitlines()) if line.startswith("throughput:")]
    assert len(said) == 1 and done and said[0] < done[0], stderr[-3000:]  # once, before rank 0 finished
    assert "for rank 1, which did not arrive" in stderr and f"_ddp.py:{planted('hang.py')} main" in stderr
    (hang,) = report["ranks"]["hangs"]
    assert hang["missing"] == [1] and report["ended_s"] - hang["t_s"] > 5.0  # said with 10 s of the hang to go
    assert [f["subject"] for f in report["findings"] if f["id"] == "run.rank_hang"] == ["rank.1"]
