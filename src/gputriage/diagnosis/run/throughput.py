"""The workload's throughput, as it reported it through `gputriage.step()` or printed it (`run
--metric`: the median of the values a pattern reads in its output, steady and per phase), and its
model FLOP utilization.

The windows keep the counters' totals at their end; a phase's rate is the growth of a total between
the last window before the phase and the phase's last window, over that time. The steady state runs
from the end of start-up to the start of shut-down (`run_verdict`'s timeline), within where the workload
stepped: steady follows the steps, and a run with no GPU gets the span of its steps. The step rate is cut
into regimes of its own (`step_regimes`), GPU or not. With the model's
FLOPs per token (or per step) given, achieved TFLOP/s = rate x FLOPs, and MFU sets it against the
dense bf16 datasheet rate of the GPUs the workload used (`model.specs`).
"""

from __future__ import annotations

from gputriage.diagnosis.run.step_regimes import progress_points, regimes_of, stepping
from gputriage.diagnosis.run.verdict import EDGES
from gputriage.model.numbers import SAME_INSTANT_S, median
from gputriage.model.run import GpuStatic, Regime, RegimeThroughput, Throughput
from gputriage.model.specs import match
from gputriage.model.window import Windows

COUNTERS = ("steps", "samples", "tokens")


def _rates(points: list[tuple[float, dict[str, float]]], t0: float, t1: float) -> dict[str, float | None]:
    """Each counter's rate between the last point at or before t0 and the last point at or before t1."""
    before = [p for p in points if p[0] <= t0 + SAME_INSTANT_S]
    upto = [p for p in points if p[0] <= t1 + SAME_INSTANT_S]
    if not upto:
        return dict.fromkeys(COUNTERS)
    a = before[-1] if before else points[0]
    b = upto[-1]
    dt = b[0] - a[0]
    if dt <= 0:
        return dict.fromkeys(COUNTERS)
    return {c: round((b[1][c] - a[1][c]) / dt, 3) if b[1][c] > a[1][c] else None for c in COUNTERS}


def _median_between(metric: list[tuple[float, float]], t0: float, t1: float) -> float | None:
    values = [v for t, v in metric if t0 <= t <= t1]
    return round(float(median(values)), 4) if values else None


def throughput(
    host: Windows,
    timeline: list[Regime],
    run_start_s: float,
    gpus: list[GpuStatic],
    flops_per_token: float | None = None,
    flops_per_step: float | None = None,
    metric: tuple[str, list[tuple[float, float]]] | None = None,
) -> Throughput | None:
    """None when the workload reported nothing (`metric`: `run --metric`'s pattern and the (unix time,
    value) pairs read in the workload's output)."""
    progress = progress_points(host)
    points = [(p[0], dict(zip(COUNTERS, p[1:]))) for p in progress]
    read = metric[1] if metric else []
    if not points and not read:
        return None
    last = points[-1][1] if points else dict.fromkeys(COUNTERS, 0.0)
    sources = (["gputriage.step"] if points else []) + (["output"] if read else [])
    out = Throughput(source=" and ".join(sources), steps=last["steps"], samples=last["samples"], tokens=last["tokens"])
    stepped = stepping(progress)
    out.step_regimes = regimes_of(stepped, host.window_s, run_start_s)
    span = (stepped[0].t0_s, stepped[-1].t1_s) if stepped else None
    body = [r for r in timeline if r.regime not in EDGES]
    t0, t1 = _steady_span(out, body, host, run_start_s, span, [p[0] for p in points] + [t for t, _ in read])
    out.steady_s, out.steady_start_s = round(t1 - t0, 1), round(t0 - run_start_s, 1)
    if points:
        steady = _rates(points, t0, t1)
        out.steps_per_s, out.samples_per_s, out.tokens_per_s = steady["steps"], steady["samples"], steady["tokens"]
    if metric:
        out.metric_pattern, out.metric_lines = metric[0], len(read)
        out.metric_median = _median_between(read, t0, t1)
    for r in body:
        a, b = run_start_s + r.start_s, run_start_s + r.end_s
        rates = _rates(points, a, b) if points else dict.fromkeys(COUNTERS)
        out.by_regime.append(
            RegimeThroughput(
                regime=r.regime,
                start_s=r.start_s,
                end_s=r.end_s,
                steps_per_s=rates["steps"],
                samples_per_s=rates["samples"],
                tokens_per_s=rates["tokens"],
                metric_median=_median_between(read, a, b) if read else None,
            )
        )
    _model_flops(out, gpus, flops_per_token, flops_per_step)
    return out


def _steady_span(
    out: Throughput,
    body: list[Regime],
    host: Windows,
    run_start_s: float,
    stepped: tuple[float, float] | None,
    times: list[float],
) -> tuple[float, float]:
    """The steady span (unix s): the GPU timeline's body (start-up and shut-down left out), within where the
    workload stepped (`stepped`: from the reading before its first step to its last step) — steady follows the steps,
    GPU or not; without either, the whole run as far as the host was sampled or the workload reported (`run
    --metric`)."""
    if body:
        t0, t1 = run_start_s + body[0].start_s, run_start_s + body[-1].end_s
    elif stepped:
        t0, t1 = stepped
    else:
        ends = [w.t1_s for w in host][-1:]
        return (min([run_start_s, *times]) if run_start_s else min(times)), max(times + ends)
    if stepped:
        s0, s1 = stepped
        if max(t0, s0) < min(t1, s1):
            t0, t1 = max(t0, s0), min(t1, s1)
        out.steady_follows = "steps"
    return t0, t1


def _model_flops(out: Throughput, gpus: list[GpuStatic], per_token: float | None, per_step: float | None) -> None:
    """The model's achieved TFLOP/s from the steady rate, and its MFU against the GPUs' dense bf16 datasheet rate."""
    achieved = None
    if per_token and out.tokens_per_s:
        achieved = per_token * out.tokens_per_s / 1e12
    elif per_step and out.steps_per_s:
        achieved = per_step * out.steps_per_s / 1e12
    if achieved is None:
        return
    out.achieved_tflops = round(achieved, 2)
    specs = [match(None, g.memory_total_bytes, g.name) for g in gpus]
    peaks = [s.tflops("bf16") for s in specs if s is not None]
    if peaks and len(peaks) == len(gpus) and all(peaks):
        out.peak_tflops = round(sum(p for p in peaks if p), 1)
        out.mfu_pct = round(100 * achieved / out.peak_tflops, 1)
        names = sorted({s.name for s in specs if s is not None})
        out.peak_source = f"dense bf16 datasheet rate of {len(gpus)} x {', '.join(names)}"


def against_bench(t: Throughput, bf16_tflops_per_gpu: float, gpus: int, when: str) -> None:
    """MFU against the bf16 GEMM rate `bench` measured on this machine (what its GPUs reach here, at their
    clocks and power limit), beside the datasheet's."""
    if t.achieved_tflops is None or bf16_tflops_per_gpu <= 0 or gpus < 1:
        return
    t.bench_tflops = round(bf16_tflops_per_gpu * gpus, 1)
    t.mfu_bench_pct = round(100 * t.achieved_tflops / t.bench_tflops, 1)
    t.bench_source = f"matmul.bf16 of `gputriage bench` on this machine ({when}), x {gpus} GPU{'s' if gpus > 1 else ''}"
