"""GPU memory that grows through a run's steady state (`run.vram_growing`), on H200 recordings: a training loop
that keeps each step's predictions on the GPU, and every other recorded run, whose memory holds still."""

from __future__ import annotations

import dataclasses
import io

import msgspec
from rich.console import Console

from gputriage.diagnosis.run.gather import gather
from gputriage.diagnosis.run.judge import judge
from gputriage.diagnosis.run.rules import vram_growing
from gputriage.diagnosis.run.rules.vram_growing import CACHE_CAUSE, GROWTH_MIN, LEAK_CAUSE
from gputriage.model.run import RunMeta, RunReport
from gputriage.model.sample import Sample
from gputriage.report.html import render_html
from gputriage.report.run_terminal import render
from gputriage.sampling.session import replay
from gputriage.testing.oom_runs import growth_dump
from recordings import FIXTURES, judged, recorded, runs


def growing(rep: RunReport):
    return next((f for f in rep.findings if f.id == "run.vram_growing"), None)


def test_predictions_kept_on_the_gpu_are_found_growing_with_when_the_gpu_is_full():
    # 1 MiB of predictions kept per step, about 280 steps a second: the workload printed 2.2 GiB kept in 8 s
    unseen = runs("runs_unseen6.json.gz")
    for name in ("vram_leak", "vram_leak_nogpm"):
        f = growing(judged(unseen[name]))
        assert f is not None and f.severity.value == "warn"
        assert 250 < f.evidence["growth_mib_per_s"] < 330
        assert 300 < f.evidence["full_in_s"] < 700 and "full in" in f.symptom
        assert f.cause not in (LEAK_CAUSE, CACHE_CAUSE)  # recorded before the allocator reported its tensors' bytes
    assert growing(judged(unseen["int8_gemm"])) is None  # the same kind of loop, nothing kept


def test_memory_that_holds_still_after_its_start_up_is_not_growing():
    # every recorded run of the gallery and of the workloads outside it: only the predictions kept and the
    # block recompiled for each new sequence length (the allocator caching blocks of each new size) grow
    grew, seen = set(), set()
    for path in sorted(FIXTURES.glob("runs_*.json.gz")):
        for name, rec in runs(path.name).items():
            if not isinstance(rec, dict) or "samples" not in rec or "meta" not in rec:
                continue
            try:
                samples = [msgspec.convert(s, Sample) for s in rec["samples"]]
            except msgspec.ValidationError:
                continue  # the oldest recordings' untyped layout: read in their own tests
            rep = judge(
                replay(samples, msgspec.convert(rec["meta"], RunMeta), command=rec.get("command") or []),
                rec.get("exit_code"),
            )
            seen.add(name)
            f = growing(rep)
            if f is not None:
                assert f.evidence["grown_mib"] >= GROWTH_MIN.value
                grew.add(name)
    assert {"vram_leak", "vram_leak_nogpm"} <= grew
    # what grows besides the leaks: workloads that recompile for each new shape (each graph's memory kept)
    assert all(n.startswith(("vram_leak", "recompile_shapes", "compile_graph_breaks")) for n in grew), grew
    # among them a KV-cache pool taken at start (96% of VRAM) and a loop near full whose shapes change each step
    assert len(seen) >= 80 and {"kv_prealloc_serving_gpm", "near_full_retries_nogpm", "empty_cache_loop_gpm"} <= seen


def test_growing_memory_is_a_leak_when_the_tensors_hold_it_and_the_cache_when_they_do_not():
    again = runs("runs_unseen6_again.json.gz")
    leak = growing(judged(again["vram_leak"]))
    assert leak is not None
    e = leak.evidence
    assert (
        leak.cause == LEAK_CAUSE
        and abs(e["held_growth_mib_per_s"] - e["growth_mib_per_s"]) < 0.2 * e["growth_mib_per_s"]
    )
    # a block compiled for each new sequence length: NVML sees 37 MiB/s, the tensors hold 1 MiB/s more
    cache = growing(judged(again["recompile_shapes"]))
    assert cache is not None and cache.cause == CACHE_CAUSE
    assert cache.evidence["held_growth_mib_per_s"] < 0.1 * cache.evidence["growth_mib_per_s"]
    for name in ("healthy", "gpt_loop", "item_sync", "workers_augment"):
        assert growing(judged(again[name])) is None, name


def test_a_growth_the_workload_snapshotted_names_the_lines_that_hold_it():
    """The H200 loop that keeps its predictions, with a snapshot of a growth saved beside it (one the H100 run of
    examples/oom/growing.py saved while its outputs piled up: the wiring is under test, not the pair): the finding
    names the line whose live bytes grew, and the snapshot."""
    rec = recorded(runs("runs_unseen6.json.gz")["vram_leak"])
    rec.memory = [growth_dump("growing")]
    report = judge(rec, 0)
    f = growing(report)
    assert f is not None and "oom/growing.py:19 main" in f.symptom and "grown" in f.symptom
    assert f.evidence["lines_grown"][0].endswith("growing.py:19=10880.0 MiB")
    assert f.evidence["snapshot"].endswith("growing.growth.pickle.gz") and f.evidence["snapshot"] in f.decision
    assert (
        f.evidence["growth_mib_per_s"]
        == growing(judged(runs("runs_unseen6.json.gz")["vram_leak"])).evidence["growth_mib_per_s"]
    )  # the rate is the GPU's, as without the snapshot
    assert report.memory is not None and report.memory.state.oom is None
    out = io.StringIO()
    render(report, Console(file=out, width=160, color_system=None))
    text = out.getvalue()
    assert "GPU memory while its live memory grew" in text and "Lines whose live bytes grew" in text
    assert "Segment map at the snapshot" in render_html(report)


def test_a_growth_snapshot_of_another_gpu_names_no_lines():
    rec = recorded(runs("runs_unseen6.json.gz")["vram_leak"])
    rec.memory = [growth_dump("growing")]
    ev = gather(rec, 0)
    assert ev.growth_snapshot is not None and ev.growth_snapshot.gpu == 0
    (f,) = vram_growing.evaluate(ev)
    assert "lines_grown" in f.evidence
    ev.growth_snapshot = dataclasses.replace(ev.growth_snapshot, gpu=1)  # its process held another GPU
    (f,) = vram_growing.evaluate(ev)
    assert "lines_grown" not in f.evidence and "snapshot" not in f.evidence
