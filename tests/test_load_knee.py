"""The knee of a sweep and the findings about its shape: a server killed mid-sweep has no knee above its errors,
a dip is not the plateau when a later step gives far more, a sweep still rising has no knee; a collapse of
throughput under load is load.throughput_collapse; a local server on a saturated machine is load.shared_cpu."""

from __future__ import annotations

from pathlib import Path

import msgspec

from gputriage.diagnosis.serving.judge import findings
from gputriage.diagnosis.serving.knee import knee
from gputriage.model.finding import Severity
from gputriage.model.load import LoadReport, LoadStep, Percentiles, ServerProcess

FIXTURES = Path(__file__).parent / "fixtures"


def step(
    c: int,
    tok_s: float,
    *,
    requests: int = 16,
    errors: dict[str, int] | None = None,
    tpot_ms: float = 10.0,
    machine_cpu_pct: float | None = None,
    local: bool = False,
) -> LoadStep:
    failed = sum((errors or {}).values())
    return LoadStep(
        concurrency=c,
        requests=requests,
        ok=requests - failed,
        errors=errors or {},
        output_tokens_per_s=tok_s,
        tpot=Percentiles(p50_ms=tpot_ms),
        ttft=Percentiles(p50_ms=20.0),
        machine_cpu_pct=machine_cpu_pct,
        server_process=ServerProcess(pid=1, cpu_pct=95.0) if local else None,
    )


def _recorded(name: str) -> LoadReport:
    return msgspec.json.decode((FIXTURES / name).read_bytes(), type=LoadReport)


def test_a_server_killed_mid_sweep_has_no_knee_above_its_errors():
    """Concurrency 1 served, then every request refused: no "more load only adds latency" at 1, and the
    errors are named critical."""
    steps = [step(1, 100), step(2, 0, errors={"connect": 16}), step(4, 0, errors={"connect": 16})]
    k = knee(steps, None)
    assert k is not None and k.concurrency is None and k.by == "errors"
    assert "requests failed from concurrency 2" in k.why and "adds latency" not in k.why
    fs = {f.id: f for f in findings(steps)}
    assert fs["load.errors"].severity is Severity.critical
    assert "load.throughput_collapse" not in fs  # the errors say why throughput fell


def test_a_dip_is_not_the_plateau_when_a_later_step_gives_far_more():
    """The recorded H200 sweep with a KV cache too small: 41 → 21 → 44 → 102 tok/s. The old rule stopped at the
    first dip (knee at 1); throughput still rose 2.3x at the last step."""
    r = _recorded("h200/load_capped_kv.json")
    tps = [s.output_tokens_per_s for s in r.steps]
    assert tps[1] < tps[0] and tps[-1] > 2 * tps[0]
    k = knee(r.steps, None)
    assert k is not None and k.concurrency is None and k.why == "throughput still rising at concurrency 8"


def test_the_knee_is_the_lightest_load_near_the_sweeps_peak():
    steps = [step(1, 100), step(2, 105), step(4, 180), step(8, 250), step(16, 240), step(32, 245)]
    k = knee(steps, None)
    assert k is not None and k.concurrency == 8 and k.by == "saturation" and "250 at concurrency 8" in k.why
    recorded = _recorded("cpu/load_vllm_cpu_max_num_seqs_2.json")  # 121, 188, 182 tok/s at 1, 2, 8
    assert knee(recorded.steps, None).concurrency == 2


def test_a_sweep_that_never_saturates_has_no_knee():
    for steps in ([step(1, 100), step(2, 190), step(4, 370), step(8, 700)], [step(8, 700)]):
        k = knee(steps, None)
        assert k is not None and k.concurrency is None and k.rate_per_s is None and k.by == "none"
    assert knee([step(1, 100), step(2, 190), step(4, 370)], None).why == "throughput still rising at concurrency 4"


def test_a_collapse_of_throughput_under_load_is_a_finding():
    """What a tiny KV cache did to `transformers serve` (110 → 12 tok/s, TPOT 13.8 → 369 ms): the server does less
    work as it is given more."""
    steps = [step(1, 110, tpot_ms=13.8), step(2, 60, tpot_ms=80), step(4, 25, tpot_ms=200), step(8, 12, tpot_ms=369)]
    fs = {f.id: f for f in findings(steps)}
    f = fs["load.throughput_collapse"]
    assert f.severity is Severity.critical and f.evidence["peak_at"] == "concurrency 1"
    assert f.evidence["at"] == "concurrency 8" and f.evidence["output_tokens_per_s"] == [110, 12]
    assert "110 tok/s at concurrency 1, 12 at concurrency 8" in f.symptom and "TPOT 13.8 → 369.0 ms" in f.symptom
    k = knee(steps, None)
    assert k is not None and k.concurrency == 1 and "fell to 12" in k.why
    # a fall to 60% of the peak is a plateau with noise, not a collapse
    assert "load.throughput_collapse" not in {f.id for f in findings([step(1, 100), step(2, 60)])}
    half = {f.id: f for f in findings([step(1, 100), step(2, 45)])}["load.throughput_collapse"]
    assert half.severity is Severity.warn


def test_no_recorded_sweep_is_called_a_collapse():
    for path in sorted(FIXTURES.glob("*/load_*.json")):
        r = msgspec.json.decode(path.read_bytes(), type=LoadReport)
        assert "load.throughput_collapse" not in {f.id for f in findings(r.steps)}, path.name


def test_a_local_server_on_a_saturated_machine_is_said():
    """The server's process runs here and the machine's CPUs were 97% busy: the figures are the crowded
    machine's. The same load with the server elsewhere, or the CPUs at 60%, is not called so."""
    fs = {
        f.id: f
        for f in findings([step(1, 100, machine_cpu_pct=60, local=True), step(2, 150, machine_cpu_pct=97, local=True)])
    }
    f = fs["load.shared_cpu"]
    assert f.evidence["from"] == "concurrency 2" and f.evidence["machine_cpu_pct"] == 97
    assert "97% busy from concurrency 2" in f.symptom
    assert "load.shared_cpu" not in {f.id for f in findings([step(1, 100, machine_cpu_pct=97)])}
    assert "load.shared_cpu" not in {f.id for f in findings([step(1, 100, machine_cpu_pct=60, local=True)])}


def test_the_machines_cpu_over_a_step_is_read_between_the_samples_around_it():
    """Readings a second apart: 1.9 s of CPU a second on 2 cores is 95% busy; a step between two readings is
    read from the pair around it."""
    from gputriage.diagnosis.serving.stats import summarize
    from gputriage.model.load import ServerSample, StepRecord

    samples = [ServerSample(t_s=float(t), machine_busy_s=1.9 * t, machine_cores=2) for t in range(6)]
    raw = StepRecord(concurrency=2, rate_per_s=None, t0_s=1.5, t1_s=3.2, records=[], client_cpu_s=0.0)
    s = summarize(
        raw, load_t0=0.0, unix_offset=0.0, slo=None, gpu_samples=[], gpu_totals={}, server=samples, server_pid=None
    )
    assert s.machine_cpu_pct == 95.0
    assert (
        summarize(
            raw, load_t0=0.0, unix_offset=0.0, slo=None, gpu_samples=[], gpu_totals={}, server=[], server_pid=None
        ).machine_cpu_pct
        is None
    )
