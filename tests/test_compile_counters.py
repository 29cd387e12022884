"""torch.compile's silent failures: graph breaks, recompilations and the functions dynamo gives up on, read from
dynamo's own records inside the workload (`inworkload.dynamo_counters`), merged over processes
(`sampling.compile_report`), and judged (`run.graph_breaks`, `run.recompiles`). The workloads here compile for
real (dynamo with the eager backend: no inductor, seconds saved) in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest

from gputriage.diagnosis.run.rules import graph_breaks, recompiles
from gputriage.diagnosis.run.rules.recompiles import RECOMPILES_MIN
from gputriage.inworkload import dynamo_counters
from gputriage.model.compile import BreakReason, BreakSite, CompiledFunction, CompileStats
from gputriage.model.finding import Finding
from gputriage.model.recording import Recording
from gputriage.model.run import RunMeta
from gputriage.sampling.compile_report import merge, read_compile_stats
from gputriage.sampling.windows import Windower
from gputriage.testing.recordings import evidence
from gputriage.trace import inject

HERE = str(Path(dynamo_counters.__file__).parent)
# f: an `.item()` branch (line 5), given 10 batch sizes: f and the code after its break recompile for each new
# shape, 8 compilations each, then the recompile limit (8) stops f: it runs eagerly for new sizes.
# h: the same branch inside a loop (line 13): dynamo gives up on h (it runs eagerly), nothing compiled.
WORKLOAD = textwrap.dedent("""\
    import torch

    def f(x):
        y = x.sin()
        if y.sum().item() > 0:
            y = y.cos()
        return y * 2

    def h(x):
        y = x
        for _ in range(3):
            y = y.sin()
            if y.sum().item() > 0:
                y = y.cos()
        return y * 2

    torch.manual_seed(0)
    g = torch.compile(f, backend="eager", dynamic=False)
    for b in (8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 8):
        g(torch.randn(b))
    torch.compile(h, backend="eager")(torch.randn(4))
""")


def compile_findings(stats: CompileStats | None) -> list[Finding]:
    """The run's compile findings over a workload that reported `stats` (and nothing else)."""
    rec = Recording(kind="run", command=["python", "train.py"], meta=RunMeta(), gpus=[], windows=Windower([]))
    rec.compile = stats
    ev = evidence(rec)
    return [*graph_breaks.RULE.evaluate(ev), *recompiles.RULE.evaluate(ev)]


def python(script: Path, env: dict[str, str] | None = None) -> str:
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def functions(report: dict[str, Any]) -> dict[tuple[str, int, bool], dict[str, Any]]:
    return {(f["function"], f["line"], f.get("after_break", False)): f for f in report["compiled_functions"]}


def test_dynamo_records_name_breaks_recompiles_and_what_runs_eagerly(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "w.py"
    script.write_text(
        WORKLOAD
        + textwrap.dedent(f"""\
        import sys, json
        sys.path.insert(0, {HERE!r})
        import dynamo_counters
        from torch._dynamo.utils import calculate_time_spent
        print(json.dumps([dynamo_counters.read(sys.modules["torch._dynamo.utils"],
                                               sys.modules["torch._dynamo.convert_frame"]),
                          calculate_time_spent()["total_wall_time"]]))
    """)
    )
    report, seconds = json.loads(python(script).strip().splitlines()[-1])
    fs = functions(report)
    f, after, h = fs[("f", 3, False)], fs[("f", 5, True)], fs[("h", 9, False)]
    assert (f["compilations"], f["recompiles"], f["fallback"]) == (8, 7, dynamo_counters.RECOMPILE_LIMIT)
    assert (
        f["recompile_reason"] == "tensor 'x' size mismatch at index 0. expected 56, actual 64"
    )  # the 8th size, the last compiled
    assert (after["compilations"], after["recompiles"]) == (8, 7)  # then f itself runs eagerly: no call reaches it
    assert after["recompile_reason"] == "tensor 'y' size mismatch at index 0. expected 56, actual 64"
    assert (h.get("compilations", 0), h["fallback"]) == (0, dynamo_counters.LOOP_BREAK)
    assert (report["frames_compiled"], report["recompiles"]) == (16, 14)
    assert (report["graph_breaks"], report["loop_breaks"]) == (
        8 + 1,
        1,
    )  # each compilation of f meets its break; h's, once
    sites = {(s["function"], s["line"], Path(s["file"]).name): s["count"] for s in report["break_sites"]}
    assert sites == {("f", 5, "w.py"): 8, ("h", 13, "w.py"): 1}
    assert "item()" in report["break_reasons"][0]["reason"]
    assert report["compile_s"] == round(seconds, 3) > 0


def test_gputriage_frames_are_never_compiled(tmp_path: Path) -> None:
    """Loaded as `run` loads them, the hooks fire while compiled code runs: the stack sampler's gc callback (a
    collection inside a compiled function) and the profiler's module and optimizer hooks (called from modules dynamo
    gave up on). Dynamo is told to leave gputriage's frames alone once torch is imported: it sees none of them, and
    none is in the report."""
    pytest.importorskip("torch")
    script = tmp_path / "w.py"
    script.write_text(
        textwrap.dedent("""\
        import gc, json, os, sys
        import torch

        hook = sys.modules["gputriage_profiler_hook"].Profiler(os.path.join(sys.argv[0] + ".trace"), cuda=False)
        assert hook.setup()  # on_forward and on_step, armed as every module's and optimizer's hooks

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(3))

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                    if x.sum().item() > 1e9:  # inside the loop: dynamo runs forward, and the hooks, eagerly
                        x = x * 0.5
                return x

        def f(x):
            y = x.sin()
            gc.collect()  # a graph break: gc runs, and its callbacks, inside the compiled function
            return y.cos()

        net = Net()
        model = torch.compile(net, backend="eager")
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        g = torch.compile(f, backend="eager")
        for _ in range(3):
            model(torch.randn(4, 8)).sum().backward()
            opt.step()
            g(torch.randn(4))
        from torch._dynamo.convert_frame import input_codes
        seen = {c.co_filename for c in (ref() for ref in input_codes.seen) if c is not None}
        print(json.dumps(sorted(seen)))
    """)
    )
    env, folder = inject.prepare_hooks(dict(os.environ))
    env["GPUTRIAGE_PROGRESS_DIR"] = str(tmp_path)
    try:
        seen = json.loads(python(script, env).strip().splitlines()[-1])
    finally:
        inject.clean(folder)
    assert str(script) in seen  # dynamo saw the workload's frames
    assert [p for p in seen if dynamo_counters.own_file(p)] == []
    (written,) = tmp_path.glob("dynamo.*.json")
    report = json.loads(written.read_text())
    assert {Path(f["file"]).name for f in report["compiled_functions"]} == {"w.py"}
    assert {f["function"] for f in report["compiled_functions"]} >= {"forward", "f"}


def test_the_last_read_is_made_at_exit(tmp_path: Path) -> None:
    """With no periodic read after torch is imported, what the report holds was read at exit, after the workload's
    last compilation."""
    pytest.importorskip("torch")
    script = tmp_path / "w.py"
    script.write_text(
        textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {HERE!r})
        import dynamo_counters
        dynamo_counters.PERIOD_S = 3600.0
        dynamo_counters.start({str(tmp_path)!r})
        """)
        + WORKLOAD
    )
    python(script)
    (written,) = tmp_path.glob("dynamo.*.json")
    report = json.loads(written.read_text())
    assert (report["frames_compiled"], report["recompiles"], report["graph_breaks"]) == (16, 14, 9)


def test_the_example_workload_breaks_and_recompiles(tmp_path: Path) -> None:
    """examples/workloads/compile_graph_breaks.py's model (built on the CPU here) does what its docstring says on
    this torch: a break at its `.item()` line, a recompilation per new batch size, no function given up on."""
    pytest.importorskip("torch")
    example = Path(__file__).parents[1] / "examples" / "workloads" / "compile_graph_breaks.py"
    line = next(i for i, t in enumerate(example.read_text().splitlines(), 1) if ".item()" in t and "if " in t)
    script = tmp_path / "w.py"
    script.write_text(
        textwrap.dedent(f"""\
        import importlib.util, json, sys
        import torch
        sys.path.insert(0, {HERE!r})
        import dynamo_counters
        spec = importlib.util.spec_from_file_location("example", {str(example)!r})
        example = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(example)
        model = torch.compile(example.Net(), backend="eager", dynamic=False)
        for b in (4, 8, 12):
            model(torch.randn(b, example.WIDTH))
        print(json.dumps(dynamo_counters.read(sys.modules["torch._dynamo.utils"])))
    """)
    )
    report = json.loads(python(script).strip().splitlines()[-1])
    assert [(s["function"], s["line"], Path(s["file"]).name) for s in report["break_sites"]] == [
        ("forward", line, example.name)
    ]
    start = next(i for i, t in enumerate(example.read_text().splitlines(), 1) if "def forward" in t)
    forward = functions(report)[("forward", start, False)]
    assert (forward["compilations"], forward["recompiles"]) == (3, 2)
    assert not any(f.get("fallback") for f in report["compiled_functions"])


def record(cid: str, name: str | None = "f", start_us: int = 0, **kw: Any) -> SimpleNamespace:
    """One of torch's compilation records (`torch._dynamo.utils.CompilationMetrics`), as much as is read."""
    code = {"co_name": name, "co_filename": "/w.py", "co_firstlineno": 3} if name else {}
    return SimpleNamespace(**{"compile_id": cid, "start_time_us": start_us, "duration_us": 500_000, **code, **kw})


def test_compilations_are_tallied_across_reads_and_resets() -> None:
    """torch keeps its last 64 records: each read tallies the new ones (a record read twice counts once); after
    `torch._dynamo.reset()` frame numbers start again at 0 for other code."""
    tally = dynamo_counters.Tally()
    first = [record("0/0"), record("0/1", start_us=1, recompile_reason="0/0: tensor 'x' size mismatch")]
    tally.add(first)
    tally.add([*first[1:], record("0/2", start_us=2, recompile_reason="0/1: ___stack0 == 0.5  # if y:  # w.py:5")])
    tally.add([record("0/3", None, start_us=3, fail_type="Unsupported", fail_reason="Dynamo recompile limit hit")])
    tally.add([record("0/0", "g", start_us=4), record("0/0", None, start_us=4, is_forward=False)])
    (f, g) = tally.functions()
    assert (f["function"], f["compilations"], f["recompiles"], f["compile_s"]) == ("f", 3, 2, 2.0)
    assert (f["recompile_reason"], f["fallback"]) == ("___stack0 == 0.5 # if y:", dynamo_counters.RECOMPILE_LIMIT)
    assert (g["function"], g["compilations"], g["compile_s"]) == ("g", 1, 1.0)  # its backward graph's seconds too


def test_a_look_reads_dynamos_records_only_when_they_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The watcher looks once a second for the whole run: a look that finds dynamo's last record and counters as
    they were rebuilds no report; a new record, or a graph break counted, is read and written."""
    records = [record("0/0")]
    utils = SimpleNamespace(
        __spec__=SimpleNamespace(_initializing=False),
        counters={"graph_break": {}, "frames": {"total": 1}},
        get_compilation_metrics=lambda: list(records),
    )
    monkeypatch.setitem(sys.modules, "torch._dynamo.utils", utils)
    reads: list[int] = []
    real = dynamo_counters.read
    monkeypatch.setattr(dynamo_counters, "read", lambda *a: reads.append(1) or real(*a))
    watcher = dynamo_counters.Watcher(str(tmp_path))
    watcher.look()
    watcher.look()
    assert len(reads) == 1 and json.loads(next(tmp_path.glob("dynamo.*.json")).read_text())["frames_compiled"] == 1
    records.append(record("0/1", start_us=1, recompile_reason="0/0: tensor 'x' size mismatch"))
    watcher.look()
    watcher.look()
    assert len(reads) == 2 and json.loads(next(tmp_path.glob("dynamo.*.json")).read_text())["recompiles"] == 1
    utils.counters["graph_break"]["Unsupported: call_method item"] = 1
    watcher.look()
    assert len(reads) == 3 and json.loads(next(tmp_path.glob("dynamo.*.json")).read_text())["graph_breaks"] == 1


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


def test_each_function_is_named_once_over_the_ranks_that_compiled_it() -> None:
    def rank(seconds: float, reason: str) -> CompileStats:
        return CompileStats(
            frames_compiled=3,
            compiled_functions=[
                CompiledFunction(
                    function="forward",
                    file="m.py",
                    line=21,
                    compilations=3,
                    recompiles=2,
                    compile_s=seconds,
                    recompile_reason=reason,
                ),
                CompiledFunction(function="forward", file="m.py", line=27, after_break=True, compilations=1),
            ],
        )

    stats = merge([rank(4.0, "size 256"), rank(5.0, "size 320")])
    assert [(f.line, f.after_break, f.compilations, f.recompiles) for f in stats.compiled_functions] == [
        (21, False, 6, 4),
        (27, True, 2, 0),
    ]
    assert stats.compiled_functions[0].compile_s == 9.0 and stats.compiled_functions[0].recompile_reason == "size 320"


def test_findings_name_where_the_graph_breaks_and_what_recompiles() -> None:
    stats = CompileStats(
        frames_compiled=16,
        graph_breaks=8,
        recompiles=14,
        compile_s=12.4,
        break_reasons=[BreakReason(reason="Unsupported Tensor.item() call", count=8)],
        break_sites=[BreakSite(function="forward", line=27, file="/src/model.py", count=8)],
        compiled_functions=[
            CompiledFunction(
                function="forward",
                file="/src/model.py",
                line=21,
                compilations=8,
                recompiles=7,
                recompile_reason="tensor 'x' size mismatch at index 0. expected 80, actual 88",
                fallback=dynamo_counters.RECOMPILE_LIMIT,
            ),
            CompiledFunction(function="forward", file="/src/model.py", line=27, after_break=True, recompiles=7),
        ],
    )
    found = {f.id: f for f in compile_findings(stats)}
    assert set(found) == {"run.graph_breaks", "run.recompiles"}
    assert "model.py:27 in forward()" in found["run.graph_breaks"].symptom
    assert "Unsupported Tensor.item() call" in found["run.graph_breaks"].symptom
    assert found["run.graph_breaks"].evidence["resumes_at"] == ["model.py:27 in forward()"]
    symptom = found["run.recompiles"].symptom
    assert symptom.startswith(
        "torch.compile recompiled 14 times (12.4 s compiling in all): forward() (model.py:21) 7x (tensor 'x' size"
    )
    assert "forward() after line 27 7x" in symptom
    assert "forward() (model.py:21) reached dynamo's recompile limit" in symptom
    assert compile_findings(None) == []


def test_a_function_dynamo_gave_up_on_is_named() -> None:
    """A break inside a loop: nothing compiled, the function runs eagerly; a function at the recompile limit is a
    finding however few its recompilations."""
    loop = CompileStats(
        graph_breaks=1,
        break_sites=[BreakSite(function="forward", line=24, file="/src/model.py", count=1, in_loop=True)],
        compiled_functions=[
            CompiledFunction(function="forward", file="/src/model.py", line=20, fallback=dynamo_counters.LOOP_BREAK)
        ],
    )
    (found,) = compile_findings(loop)
    assert found.id == "run.graph_breaks"
    assert found.symptom == (
        "torch.compile gave up on forward() (model.py:20): a graph break inside a loop (model.py:24 in forward()) "
        "makes it run eagerly, uncompiled"
    )
    assert found.evidence["breaks_at"] == ["model.py:24 in forward()"]
    limited = CompileStats(
        frames_compiled=2,
        recompiles=1,
        compiled_functions=[CompiledFunction(function="step", recompiles=1, fallback=dynamo_counters.RECOMPILE_LIMIT)],
    )
    assert [f.id for f in compile_findings(limited)] == ["run.recompiles"]


def test_the_splits_are_counted_apart_from_the_breaks_in_loops_however_many_places() -> None:
    """Breaks at 12 places in loops (their sites cut to the 8 most frequent, as the workload reports them) and one
    split made twice: "2 breaks", from the loop breaks counted as such, not from the sites kept; summed over two
    ranks; an older report without the count takes the sites it kept."""
    looped = [BreakSite(function=f"f{i}", line=10 + i, file="/w.py", count=1, in_loop=True) for i in range(7)]
    split = BreakSite(function="forward", line=27, file="/w.py", count=2)
    rank = CompileStats(frames_compiled=2, graph_breaks=14, loop_breaks=12, break_sites=[split, *looped])
    (found,) = compile_findings(rank)
    assert "split the graph at 1 place (w.py:27 in forward()): 2 breaks over 2 compilations" in found.symptom
    both = merge([rank, rank])
    assert (both.graph_breaks, both.loop_breaks) == (28, 24)
    (found,) = compile_findings(both)
    assert ": 4 breaks over 4 compilations" in found.symptom
    older = msgspec.structs.replace(rank, loop_breaks=None, graph_breaks=9)
    (found,) = compile_findings(older)
    assert ": 2 breaks over 2 compilations" in found.symptom  # 9 less the 7 loop breaks its sites kept


def test_an_older_report_is_still_judged() -> None:
    """A recorded run's report, from before functions carried their own counts."""
    few = CompileStats(frames_compiled=2, recompiles=int(RECOMPILES_MIN.value) - 1)
    assert compile_findings(few) == []  # a warm-up shape is no finding
    old = CompileStats(frames_compiled=9, recompiles=7, compiled_functions=[CompiledFunction(function="forward")])
    (found,) = compile_findings(old)
    assert found.symptom == "torch.compile recompiled 7 times (forward)"


def test_run_reports_graph_breaks_of_a_compiled_workload(tmp_path: Path) -> None:
    """`gputriage run --json` on a CPU workload under torch.compile: the report carries dynamo's counts, gputriage's
    own frames are not among them, and the findings name the lines."""
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
    compiled = report["compile"]
    assert (compiled["frames_compiled"], compiled["recompiles"], compiled["graph_breaks"]) == (16, 14, 9)
    assert {Path(f["file"]).name for f in compiled["compiled_functions"]} == {"loop.py"}
    ids = {f["id"]: f for f in report["findings"]}
    assert "loop.py:5 in f()" in ids["run.graph_breaks"]["symptom"]
    assert "f() (loop.py:3) 7x (tensor 'x' size mismatch" in ids["run.recompiles"]["symptom"]


def test_monitor_reports_what_torch_compile_did_in_its_block_and_keeps_dynamo_off_its_own_code(tmp_path: Path) -> None:
    """`gputriage.monitor()` samples its own process: the stack sampler's gc callback fires inside compiled code, so
    the block keeps dynamo off gputriage's frames as `run` does, and its report says where the graph broke."""
    pytest.importorskip("torch")
    script = tmp_path / "m.py"
    script.write_text(
        textwrap.dedent("""\
        import gc, json
        import torch
        import gputriage

        def f(x):
            y = x.sin()
            if y.sum().item() > 1e9:  # a graph break
                y = y * 0.5
            gc.collect()  # the stack sampler's gc callback runs inside the compiled code
            return y.cos()

        with gputriage.monitor(store=False) as m:
            g = torch.compile(f, backend="eager")
            for _ in range(3):
                g(torch.randn(4))
        from torch._dynamo.convert_frame import input_codes
        seen = sorted({c.co_filename for c in (ref() for ref in input_codes.seen) if c is not None})
        c = m.report.compile
        print(json.dumps({"seen": seen, "breaks": c.graph_breaks if c else None,
                          "files": [x.file for x in c.compiled_functions] if c else []}))
    """)
    )
    out = json.loads(python(script, dict(os.environ)).strip().splitlines()[-1])
    assert [p for p in out["seen"] if dynamo_counters.own_file(p)] == []
    assert out["breaks"] and out["breaks"] >= 1
    assert {Path(f).name for f in out["files"]} == {"m.py"}
