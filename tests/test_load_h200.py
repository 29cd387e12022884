"""`gputriage load` recorded on one H200 against `transformers serve --device cuda --continuous-batching` (a
0.89 B Llama built by benchmarks/serving_model.py, bf16, random weights): the open sweep, a KV cache set too
small, a long-prompt mix with its control, and streams that carried no text. Each recording is judged again
here by today's rules; tests/fixtures/h200/README.md says how each was made."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from gputriage.diagnosis.serving.judge import findings
from gputriage.diagnosis.serving.knee import knee
from gputriage.model.load import LoadReport

FIXTURES = Path(__file__).parent / "fixtures" / "h200"


def _report(name: str) -> LoadReport:
    return msgspec.json.decode((FIXTURES / name).read_bytes(), type=LoadReport)


def _ids(r: LoadReport) -> set[str]:
    return {f.id for f in findings(r.steps)}


def test_the_open_sweep_names_a_python_bound_server_and_no_queue():
    """Concurrency 1 to 256: throughput rises 27x while the GPU's SMs stay under 15% busy and one server thread
    holds a core; the KV cache allocation fills VRAM at 256. Nothing queues: TTFT grows with the batch's
    decode time, not beyond it."""
    r = _report("load_transformers_serve_sweep.json")
    assert r.meta.gpu_names == ["NVIDIA H200"] and [s.concurrency for s in r.steps] == [1, 4, 16, 64, 256]
    assert all(s.ok == s.requests and not s.errors for s in r.steps)
    tps = [s.output_tokens_per_s for s in r.steps]
    assert tps == sorted(tps) and tps[-1] > 20 * tps[0]
    fs = {f.id: f for f in findings(r.steps)}
    assert set(fs) == {"load.server_cpu_bound", "load.vram_headroom", "load.gpu_underfilled"}
    cpu = fs["load.server_cpu_bound"].evidence
    assert cpu["top_thread_pct"] >= 90 and cpu["gpu_activity_pct"] < 10
    assert fs["load.vram_headroom"].evidence["at"] == "concurrency 256"
    k = knee(r.steps, r.meta.slo)
    assert k is not None and k.concurrency == 1  # TPOT p90 over 50 ms from concurrency 4


def test_a_kv_cache_too_small_queues_requests_seen_against_the_lightest_load():
    """`--cb-num-blocks 8 --cb-block-size 128`: two 384-token requests fill the cache. At concurrency 8 TTFT
    is 166x the unloaded one while TPOT is back where it was alone: requests wait for room. Step to step the
    cache thrashes first (concurrency 2 halves throughput), so only the lightest step shows the queue."""
    r = _report("load_capped_kv.json")
    f = next(f for f in findings(r.steps) if f.id == "load.queueing")
    assert f.evidence["from"] == "concurrency 1" and f.evidence["to"] == "concurrency 8"
    (t0, t1), (d0, d1) = f.evidence["ttft_p50_ms"], f.evidence["tpot_p50_ms"]
    assert t1 > 100 * t0 and 0.8 < d1 / d0 < 1.2
    assert "load.queueing" not in _ids(_report("load_transformers_serve_sweep.json"))


def test_long_prompts_are_measured_against_their_control_in_the_same_run():
    """`--long-prompts 0.15 --long-factor 64` at concurrency 16, then the same requests at one length: every
    token 3.2x slower with the long ones. In this 22 s step one prompt of 48 came out long (8,192 tokens: the
    mean input is 296 tokens against 128), and the slowdown held the whole time, not only while it was
    prefilled (ITL 1.15x then): the batch pays for its longest sequence."""
    r = _report("load_long_prompts_with_control.json")
    mix, control = r.steps
    assert not mix.control and control.control and mix.concurrency == control.concurrency == 16
    assert mix.input_tokens_mean is not None and control.input_tokens_mean is not None
    assert mix.input_tokens_mean > 2 * control.input_tokens_mean
    fs = {f.id: f for f in findings(r.steps)}
    f = fs["load.long_prompts_slow_decode"]
    assert f.evidence["tpot_control_ratio"] == pytest.approx(mix.tpot.p50_ms / control.tpot.p50_ms, abs=0.01)
    assert f.evidence["tpot_control_ratio"] > 3 and "3.2x slower" in f.symptom
    assert "load.prefill_interference" not in fs
    # the control is not a step of the sweep: the knee and the step-to-step rules see the mix alone
    assert knee(r.steps, None) == knee([mix], None)
    assert not findings([control])  # a control alone is judged by nothing


def test_a_control_step_that_is_as_fast_is_no_finding():
    r = _report("load_long_prompts_with_control.json")
    mix, control = r.steps
    same = msgspec.structs.replace(control, tpot=mix.tpot)
    assert "load.long_prompts_slow_decode" not in {f.id for f in findings([mix, same])}


def test_streams_without_text_are_errors_that_say_why():
    """The first H200 sweep, before the model's tokenizer covered its vocabulary: random weights picked ids
    the tokenizer lacks, which decode to nothing; half the requests streamed no text at all."""
    r = _report("load_empty_streams.json")
    f = next(f for f in findings(r.steps) if f.id == "load.errors")
    assert set(f.evidence["errors"]) == {"empty"} and "streamed no text" in f.cause
    assert "HTTP 429" not in f.cause


def test_the_curve_keeps_marks_that_fall_on_one_spot_apart():
    """Concurrency 1 and 4 sit side by side at the bottom left of the H200 sweep's curve: both marks stay
    readable (never merged into a "14")."""
    from gputriage.report.load_terminal import curve

    r = _report("load_transformers_serve_sweep.json")
    words = " ".join(curve(r.steps)).replace("┤", " ").replace("┼", " ").replace("│", " ").split()
    for mark in ("1", "4", "16", "64", "256"):
        assert mark in words, mark
    assert "14" not in words
