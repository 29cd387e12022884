"""The workload's step-rate regimes (`Throughput.step_regimes`) and the span its steady rate is taken over, as the
terminal and the HTML report say them: "over the 30 s it stepped", "step rate by regime: 0–33 s 523 steps/s · 33–63 s
78 steps/s"."""

from __future__ import annotations

from typing import Optional

from rich.text import Text

from gputriage.model.run import StepRegime, Throughput
from gputriage.report.html_page import table


def rate_text(v: Optional[float]) -> str:
    """A rate as a reader takes it in: 1 decimal under 100, none above."""
    return "" if v is None else f"{v:,.1f}" if v < 100 else f"{v:,.0f}"


def steady_span(t: Throughput) -> str:
    """Where the steady rate was taken: where the workload stepped, or the steady state of the GPU timeline."""
    if t.steady_follows == "steps":
        start = f" from +{t.steady_start_s:.0f} s" if t.steady_start_s else ""
        return f" over the {t.steady_s:.0f} s it stepped{start}"
    return f" over the steady {t.steady_s:.0f} s" if t.steady_s >= 1 else ""


def _regime(r: StepRegime) -> str:
    return f"{r.start_s:.0f}–{r.end_s:.0f} s {rate_text(r.steps_per_s)} steps/s"


def terminal_lines(t: Throughput) -> list[Text]:
    """The step rate by regime, where it changed (nothing where it held)."""
    if len(t.step_regimes) < 2:
        return []
    return [Text("  step rate by regime: " + " · ".join(_regime(r) for r in t.step_regimes), style="cyan")]


def html(t: Throughput) -> str:
    """A table of the step-rate regimes, where the rate changed."""
    if len(t.step_regimes) < 2:
        return ""
    rows = (
        (
            f"{r.start_s:.0f}",
            f"{r.end_s:.0f}",
            rate_text(r.steps_per_s),
            rate_text(r.samples_per_s),
            rate_text(r.tokens_per_s),
            f"{r.spread_share:.0%}" if r.spread_share is not None else "",
        )
        for r in t.step_regimes
    )
    return "<h3>Step rate by regime</h3>" + table(
        ("from (s)", "to (s)", "steps/s", "samples/s", "tokens/s", "spread of its windows"),
        rows,
        numeric=(0, 1, 2, 3, 4, 5),
    )
