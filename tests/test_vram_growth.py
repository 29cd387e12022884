"""GPU memory that grows through a run's steady state (`run.vram_growing`), on H200 recordings: a training loop
that keeps each step's predictions on the GPU, and every other recorded run, whose memory holds still."""

from __future__ import annotations

import msgspec

from gputriage.diagnosis.run.judge import judge
from gputriage.diagnosis.run.rules.vram_growing import CACHE_CAUSE, GROWTH_MIN, LEAK_CAUSE
from gputriage.model.run import RunMeta, RunReport
from gputriage.model.sample import Sample
from gputriage.sampling.session import replay
from recordings import FIXTURES, judged, runs


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
