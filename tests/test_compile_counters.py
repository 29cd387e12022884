"""torch.compile's silent failures: graph breaks and recompilations read from dynamo's own counters inside the
workload (`inworkload.dynamo_counters`), merged over processes (`sampling.compile_report`), and judged
(`run.graph_breaks`, `run.recompiles`)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import msgspec
import pytest

from gputriage.diagnosis.run.compile import RECOMPILES_MIN, compile_findings
from gputriage.inworkload import dynamo_counters
from gputriage.model.compile import BreakReason, BreakSite, CompileStats
from gputriage.sampling.compile_report import merge, read_compile_stats

WORKLOAD = textwrap.dedent("""\
    import torch

    def f(x):
        y = x.sin()
        if y.sum().item() > 0:
            y = y.cos()
        return y

    g = torch.compile(f, backend="eager", dynamic=False)
    for b in (8, 16, 24, 32, 40, 8):
        g(torch.randn(b))
""")


def test_dynamo_counters_name_the_break_and_count_recompiles(tmp_path: Path) -> None:
    """A real torch.compile (dynamo with the eager backend: no inductor, seconds saved) in a fresh interpreter:
    the `.item()` branch breaks the graph at line 5, and five new batch sizes recompile."""
    pytest.importorskip("torch")
    script = tmp_path / "w.py"
    script.write_text(
        WORKLOAD
        + textwrap.dedent(f"""\
        import sys, json
        sys.path.insert(0, {str(Path(dynamo_counters.__file__).parent)!r})
        import dynamo_counters
        print(json.dumps(dynamo_counters.read(sys.modules["torch._dynamo.utils"],
                                              sys.modules["torch._dynamo.convert_frame"])))
    """)
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=True)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["graph_breaks"] >= 1
    assert "item()" in report["break_reasons"][0]["reason"]
    assert [(s["function"], s["line"], Path(s["file"]).name) for s in report["break_sites"]] == [("f", 5, "w.py")]
    assert report["recompiles"] >= 4  # 8, 16, 24, 32, 40: four new shapes after the first
    assert report["compiled_functions"][0]["function"] == "f"


def test_nothing_is_reported_where_nothing_compiled(tmp_path: Path) -> None:
    utils = SimpleNamespace(counters={"frames": {}})  # dynamo imported, nothing compiled yet
    assert dynamo_counters.read(utils)["frames_compiled"] == 0
    assert read_compile_stats(tmp_path) is None
    assert read_compile_stats(tmp_path / "missing") is None


def test_reports_of_several_processes_are_summed(tmp_path: Path) -> None:
    rank = CompileStats(
        frames_compiled=4,
        graph_breaks=2,
        recompiles=3,
        compile_s=1.5,
        break_reasons=[BreakReason(reason="Unsupported Tensor.item() call", count=2)],
        break_sites=[BreakSite(function="forward", line=27, file="model.py", count=2)],
    )
    for pid in (101, 102):
        (tmp_path / f"dynamo.{pid}.json").write_bytes(msgspec.json.encode(rank))
    (tmp_path / "dynamo.999.json").write_text("{half a file")  # being replaced: skipped, the others count
    stats = read_compile_stats(tmp_path)
    assert stats is not None
    assert (stats.frames_compiled, stats.graph_breaks, stats.recompiles, stats.compile_s) == (8, 4, 6, 3.0)
    assert [(s.function, s.line, s.count) for s in stats.break_sites] == [("forward", 27, 4)]
    assert merge([rank]) is rank


def test_findings_name_where_the_graph_breaks_and_how_often_it_recompiles() -> None:
    stats = CompileStats(
        frames_compiled=9,
        graph_breaks=5,
        recompiles=7,
        compile_s=12.4,
        break_reasons=[BreakReason(reason="Unsupported Tensor.item() call", count=5)],
        break_sites=[BreakSite(function="forward", line=27, file="/src/model.py", count=5)],
    )
    found = {f.id: f for f in compile_findings(stats)}
    assert set(found) == {"run.graph_breaks", "run.recompiles"}
    assert "model.py:27 in forward()" in found["run.graph_breaks"].symptom
    assert found["run.graph_breaks"].evidence["resumes_at"] == ["model.py:27 in forward()"]
    assert "recompiled 7 times" in found["run.recompiles"].symptom
    assert compile_findings(None) == []
    few = CompileStats(frames_compiled=2, recompiles=int(RECOMPILES_MIN.value) - 1)
    assert compile_findings(few) == []  # a warm-up shape is no finding


def test_run_reports_graph_breaks_of_a_compiled_workload(tmp_path: Path) -> None:
    """`gputriage run --json` on a CPU workload under torch.compile: the report carries dynamo's counts and the
    finding names the line."""
    pytest.importorskip("torch")
    script = tmp_path / "loop.py"
    script.write_text(WORKLOAD)
    out = subprocess.run(
        [sys.executable, "-m", "gputriage", "run", "--json", "--no-store", "--", sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["compile"]["graph_breaks"] >= 1
    ids = {f["id"]: f for f in report["findings"]}
    assert "loop.py:5 in f()" in ids["run.graph_breaks"]["symptom"]
