"""A long run judged regime by regime: each phase of the timeline gets its own verdict (what its windows show,
what to do), and a change of regime in the middle of the run is a finding (`run.regime_changed`): when, from
what to what, and what the workload's own rate did. A job that is compute-bound for an hour and then starves on a
slow shard is not "mostly compute_bound": the second hour has a cause of its own."""

from __future__ import annotations

from typing import Callable, Sequence

from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold
from gputriage.model.numbers import median
from gputriage.model.run import Regime, Throughput
from gputriage.model.window import WindowMetrics

MIN_REGIME_S = Threshold(
    "regime_min_s",
    10.0,
    "s",
    "length a phase of the timeline needs, and its windows at least three, to count as a regime "
    "of its own (shorter: a blip, a checkpoint, a garbage collection)",
    "judgement: at 1 s windows, three windows are the least a median is taken over",
)
RATE_CHANGE = Threshold(
    "regime_rate_change_share",
    0.2,
    "of the rate before",
    "change of the workload's own rate (steps, samples or tokens per second) between two regimes "
    "reported with the change",
    "judgement: step rates of the recorded H200 loops vary by under 15% from run to run",
)

REGIME_CHANGED = FindingSpec(
    id="run.regime_changed",
    step=2,
    severity=Severity.warn,
    commands=("run", "watch", "monitor"),
    needs=("gpu",),
    symptom="The run changed regime part-way through",
    cause="Something changed while the job ran: a slower data shard or source, a neighbour on the GPU or the host, "
    "a thermal or power event, memory that crept up, a checkpoint that grew; the run's overall verdict "
    "hides it behind the dominant regime",
    decision="Look at what started at that moment (the data the job reached, other jobs, the GPU's clocks); each "
    "regime's own verdict and decision is in the timeline; `gputriage run --profile auto` profiles the new "
    "regime when it lasts",
    condition=f"a regime of >= {MIN_REGIME_S.value:g} s (and 3 windows) after the start-up that names another "
    "bottleneck than the regime before it",
    thresholds=(MIN_REGIME_S, RATE_CHANGE),
)

SPECS = (REGIME_CHANGED,)
BODY_EXCLUDED = ("start-up", "shut-down", "warm-up")


def is_bottleneck_regime(r: Regime) -> bool:
    return not r.regime.startswith(BODY_EXCLUDED) and r.regime in B._value2member_map_


Wording = Callable[[B, dict[str, float]], str]


BLIP_WINDOWS = 1.5  # a run of labels held for less than this many windows is one window: a blip, folded


def lasts(r: Regime, window_s: float) -> bool:
    """A regime long enough to count as one (not a blip)."""
    return is_bottleneck_regime(r) and r.end_s - r.start_s >= max(MIN_REGIME_S.value, 3 * window_s)


def lasting(timeline: Sequence[Regime], window_s: float) -> list[Regime]:
    """The regimes of a timeline that count as regimes (`lasts`): no start-up, warm-up, shut-down or blip."""
    return [r for r in timeline if lasts(r, window_s)]


def describe_regimes(
    timeline: list[Regime], ws: Sequence[WindowMetrics], t0: float, window_s: float, describe: Wording, decide: Wording
) -> list[Regime]:
    """Each lasting bottleneck regime with the medians of its windows, its summary and decision, in the verdict's
    own wording (`describe`, `decide`)."""
    out = []
    for r in timeline:
        if not lasts(r, window_s):
            out.append(r)
            continue
        inside = [w for w in ws if w.t0_s - t0 >= r.start_s - 1e-6 and w.t1_s - t0 <= r.end_s + 1e-6]
        evidence = _medians(inside)
        b = B(r.regime)
        out.append(
            Regime(
                r.start_s,
                r.end_s,
                r.regime,
                summary=f"{describe(b, evidence)}: {b.value}",
                decision=decide(b, evidence),
                evidence=evidence,
            )
        )
    return out


def _medians(ws: Sequence[WindowMetrics]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name in (
        "util_pct",
        "sm_active_pct",
        "tensor_active_pct",
        "dram_active_pct",
        "pcie_rx_mib_per_s",
        "pcie_tx_mib_per_s",
        "power_w",
        "sm_clock_mhz",
        "temperature_c",
        "workload_cpu_pct",
        "gpu_main_thread_pct",
        "top_thread_pct",
        "used_bytes",
    ):
        vals = [v for v in (getattr(w, name) for w in ws) if v is not None]
        if vals:
            out[name] = round(float(median(vals)), 2)
    return out


def _rate(throughput: Throughput | None, r: Regime) -> tuple[str, float] | None:
    if throughput is None:
        return None
    for p in throughput.by_regime:
        if abs(p.start_s - r.start_s) < 1.0 and abs(p.end_s - r.end_s) < 1.0:
            for unit, value in (
                ("tokens/s", p.tokens_per_s),
                ("samples/s", p.samples_per_s),
                ("steps/s", p.steps_per_s),
                ("(metric)", p.metric_median),
            ):
                if value is not None:
                    return unit, value
    return None


def regime_changes(
    gpu: int, timeline: list[Regime], window_s: float, throughput: Throughput | None = None, watched: bool = False
) -> list[Finding]:
    """A finding for each regime that follows a different one, both long enough to count. `watched`: a `watch`,
    which follows a GPU, not a run."""
    lasting = [r for r in timeline if lasts(r, window_s)]
    out: list[Finding] = []
    for before, after in zip(lasting, lasting[1:]):
        if before.regime == after.regime:
            continue
        evidence: dict[str, object] = {
            "at_s": after.start_s,
            "from": before.regime,
            "to": after.regime,
            "before_s": round(before.end_s - before.start_s, 1),
            "after_s": round(after.end_s - after.start_s, 1),
        }
        rate = ""
        a, b = _rate(throughput, before), _rate(throughput, after)
        if a and b and a[0] == b[0] and a[1] > 0:
            change = b[1] / a[1] - 1.0
            evidence["rate_before"], evidence["rate_after"], evidence["rate_unit"] = a[1], b[1], a[0]
            if abs(change) >= RATE_CHANGE.value:
                rate = f"; the workload's rate went {a[1]:.4g} → {b[1]:.4g} {a[0]} ({change:+.0%})"
        for name in ("util_pct", "sm_active_pct"):
            if name in before.evidence and name in after.evidence:
                evidence[f"{name}_before"], evidence[f"{name}_after"] = before.evidence[name], after.evidence[name]
        what = f"GPU {gpu}" if watched else "the run"
        symptom = f"At +{after.start_s:.0f} s {what} went from {before.regime} to {after.regime}{rate}"
        out.append(
            REGIME_CHANGED.finding(
                evidence, subject=f"gpu.{gpu}", symptom=symptom, decision=after.decision or REGIME_CHANGED.decision
            )
        )
    return out
