"""What changed on the host and the GPU when the workload's step rate changed (`rules.step_rate_changed`): the
medians of the host's, the workload's and the lead GPU's figures over the regime before and the regime after, the
ones that moved, in words ("the workload's CPU held at 99% of a core; the main thread waits for input 3% → 61%")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from gputriage.inworkload.stack_categories import doing
from gputriage.model.finding import Threshold
from gputriage.model.numbers import median
from gputriage.model.run import StepRegime
from gputriage.model.window import SHARE_FIELDS, WindowMetrics, Windows

FIGURE_POINTS = Threshold(
    "step_rate_figure_points",
    10.0,
    "percentage points",
    "how far a percentage (CPU, utilization, SM activity, iowait, a share of the main thread's time) must move "
    "between the regime before a change of step rate and the one after to be named as what changed with it",
    "judgement: the medians of the recorded H200 loops' utilization and CPU hold within a few points over a steady "
    "run (tests/fixtures/h200/runs_regime_shift.json.gz: utilization 100% → 20% and SM activity 94% → 12% at its "
    "planted change, the workload's CPU within points of itself in each regime)",
)
FIGURE_SHARE = Threshold(
    "step_rate_figure_share",
    0.15,
    "of the figure before",
    "how much a clock or a power draw must move between the regime before a change of step rate and the one after to "
    "be named as what changed with it",
    "judgement: a thermal or power slowdown takes the SM clock down by 15% or more (H200: 1980 MHz boost, under 1700 "
    "when slowed); the power of a loop at one load varies by less",
)


@dataclass
class Changed:
    """What moved between two step-rate regimes: in words, as evidence, and the workload's CPU before and after."""

    text: str
    evidence: dict[str, Any] = field(default_factory=dict)
    cpu_before: float | None = None
    cpu_after: float | None = None


# (field, words with {a} and {b} for the medians, how it moves: "points", "share" (0-1, as points), "relative", "count")
HOST_FIGURES: tuple[tuple[str, str, str], ...] = (
    ("top_thread_pct", "its busiest thread {a:.0f}% → {b:.0f}% of a core", "points"),
    ("loader_cpu_pct", "its DataLoader workers {a:.0f}% → {b:.0f}% of a core", "points"),
    ("iowait_pct", "iowait {a:.0f}% → {b:.0f}%", "points"),
    ("max_core_pct", "the host's busiest core {a:.0f}% → {b:.0f}%", "points"),
    *((f, "the main thread " + doing(c) + " {a:.0%} → {b:.0%}", "share") for c, f in SHARE_FIELDS.items()),
)
GPU_FIGURES: tuple[tuple[str, str, str], ...] = (
    ("util_pct", "GPU {gpu}'s utilization {a:.0f}% → {b:.0f}%", "points"),
    ("sm_active_pct", "GPU {gpu}'s SMs active {a:.0f}% → {b:.0f}%", "points"),
    ("sm_clock_mhz", "GPU {gpu}'s SM clock {a:.0f} → {b:.0f} MHz", "relative"),
    ("power_w", "GPU {gpu}'s power {a:.0f} → {b:.0f} W", "relative"),
    ("neighbours", "other processes computing on GPU {gpu} {a:.0f} → {b:.0f}", "count"),
)


def medians(ws: Windows, run_start_s: float, r: StepRegime, names: Sequence[str]) -> dict[str, float]:
    """Each figure's median over the windows whose middle lies in the regime."""
    inside = [w for w in ws if r.start_s <= _middle_s(w) - run_start_s <= r.end_s]
    out = {}
    for name in names:
        xs = [v for v in (getattr(w, name) for w in inside) if v is not None]
        if xs:
            out[name] = round(float(median(xs)), 3)
    return out


def _middle_s(w: WindowMetrics) -> float:
    return (w.t0_s + w.t1_s) / 2


def moved(how: str, a: float, b: float) -> float:
    """How far a figure moved, in its own measure (0: not enough to name)."""
    if how == "points":
        d = abs(b - a)
        return d / FIGURE_POINTS.value if d >= FIGURE_POINTS.value else 0.0
    if how == "share":
        return moved("points", 100 * a, 100 * b)
    if how == "count":
        return abs(round(b) - round(a))
    rel = abs(b - a) / a if a else 0.0
    return rel / FIGURE_SHARE.value if rel >= FIGURE_SHARE.value else 0.0


def what_changed(
    host: Windows, gpu: Windows | None, run_start_s: float, before: StepRegime, after: StepRegime, named: int = 4
) -> Changed:
    """The workload's CPU before and after (held or moved), and the `named` figures that moved most."""
    out = Changed(text="")
    words: list[str] = []
    ranked = []
    for ws, figures in ((host, (("workload_cpu_pct", "", "points"), *HOST_FIGURES)), (gpu, GPU_FIGURES)):
        if ws is None:
            continue
        names = [f[0] for f in figures]
        a, b = medians(ws, run_start_s, before, names), medians(ws, run_start_s, after, names)
        for name, text, how in figures:
            if name in a and name in b and (name == "workload_cpu_pct" or moved(how, a[name], b[name]) > 0):
                ranked.append((moved(how, a[name], b[name]), name, text.format(a=a[name], b=b[name], gpu=ws.gpu)))
                out.evidence |= {f"{name}_before": a[name], f"{name}_after": b[name]}
    cpu = [r for r in ranked if r[1] == "workload_cpu_pct"]
    if cpu:
        out.cpu_before, out.cpu_after = out.evidence["workload_cpu_pct_before"], out.evidence["workload_cpu_pct_after"]
        words.append(
            f"the workload's CPU held at {out.cpu_after:.0f}% of a core"
            if cpu[0][0] == 0.0
            else f"the workload's CPU {out.cpu_before:.0f}% → {out.cpu_after:.0f}% of a core"
        )
    others = sorted((r for r in ranked if r[1] != "workload_cpu_pct"), key=lambda r: -r[0])
    for _, name, _ in others[named:]:  # named only as far as they are said
        del out.evidence[f"{name}_before"], out.evidence[f"{name}_after"]
    words += [text for _, _, text in others[:named]]
    if len(words) == len(cpu):
        words.append("nothing else the sampler reads moved" if words else "nothing the sampler reads moved")
    out.text = "; ".join(words)
    return out
