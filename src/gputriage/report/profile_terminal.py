"""A `run --profile` in the terminal, beyond its merged window: every window profiled (re-armed in each new regime,
or asked by a user) with its regime and its trace's verdict, and what the profiler cost each GPU."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from gputriage.model.run import ProfilerEffect, ProfileReport, ProfileWindow
from gputriage.model.safe_text import safe_text

KINDS = {"steady": "steady state", "regime": "new regime", "asked": "asked"}


def window_line(w: ProfileWindow, run_start: float | None) -> str:
    """One profiled window: when, how long, in which regime, what its trace says, where it is."""
    parts = [f"window {w.index} ({KINDS.get(w.kind, w.kind)})"]
    if w.window_s:
        at = f" at +{w.window_s[0] - run_start:.1f} s" if run_start is not None else ""
        parts.append(f"{w.window_s[1] - w.window_s[0]:.2f} s{at}")
    if w.held_s:
        parts.append(f"held {w.held_s[1] - w.held_s[0]:.1f} s")
    if w.regime:
        parts.append(f"in {safe_text(w.regime, 60)}")
    said = f"trace: {w.bottleneck.value}" if w.bottleneck is not None else (w.error or "no verdict")
    if w.bottleneck is not None and w.gpu_idle_pct is not None:
        said += f" (GPU idle {w.gpu_idle_pct:.0f}%, confidence {w.confidence or 0.0:.2f})"
    parts.append(said + (", merged with the run's verdict" if w.used else ""))
    if w.trace_file:
        parts.append(safe_text(w.trace_file, 300))
    return ", ".join(parts)


def cost_line(gpu: str, e: ProfilerEffect, traced: bool, any_trace: bool = True) -> str:
    """What the profiler cost one GPU: GPU-Util while it held the workload, while it traced, and otherwise.
    `traced`: the effect is measured against the window the run's verdict was merged with (else over the holds);
    `any_trace`: some window wrote a trace."""
    held = f"held the workload {e.held_s:.1f} s" if e.held_s is not None else "held the workload"
    if not traced:
        nothing = " and traced nothing" if not any_trace else ""
        return (
            f"GPU {gpu}: the profiler {held}{nothing}: GPU-Util {e.inside_pct:.0f}% meanwhile, "
            f"{e.outside_pct:.0f}% in the rest of the steady run"
        )
    around = f"{e.held_pct:.0f}% while it started and exported, " if e.held_pct is not None else ""
    return (
        f"GPU {gpu}: the profiler {held}: GPU-Util {around}{e.inside_pct:.0f}% while it traced, "
        f"{e.outside_pct:.0f}% in the rest of the steady run"
    )


def render_profile_extra(profile: ProfileReport, run_start: float | None, console: Console) -> None:
    """The windows beyond the merged one, and the profiler's cost per GPU (left out of the sampler's verdict)."""
    if len(profile.windows) > 1 or any(w.kind != "steady" for w in profile.windows):
        for w in profile.windows:
            console.print(Text(window_line(w, run_start), style="dim"))
    traced = profile.window_s is not None
    any_trace = any(w.window_s for w in profile.windows) or traced
    if len(profile.effects) > 1 or not traced or any(e.held_pct is not None for e in profile.effects.values()):
        for gpu, e in sorted(profile.effects.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else 0):
            console.print(Text(cost_line(gpu, e, traced, any_trace), style="dim"))
    if not any_trace and profile.held_all_s:
        held = sum(b - a for a, b in profile.held_all_s)
        console.print(
            Text(
                f"the profiler held the workload {held:.1f} s with no trace to show for it: those seconds "
                "are left out of the sampler's verdict",
                style="dim",
            )
        )
