"""A verdict the window cannot make sure of is a best guess, and its finding says so: why, in a few words."""

from __future__ import annotations

import msgspec

from gputriage.diagnosis.trace.verdict import IDLE_TO, too_little
from gputriage.model.finding import Finding
from gputriage.model.trace import Anatomy, TraceVerdict


def why(a: Anatomy, v: TraceVerdict) -> str:
    """Why a verdict is only a guess, in a few words."""
    kernels = f"{a.kernels} kernel{'s' if a.kernels != 1 else ''}, {a.busy_us / 1000:.1f} ms busy"
    window = f"in a {a.window_us / 1000:.1f} ms window"
    if too_little(a):
        work = f"too little GPU work to judge: {kernels} {window}"
    elif v.bottleneck in IDLE_TO.values():
        work = f"only {a.gaps} idle gap{'s' if a.gaps != 1 else ''} {window}"
    else:
        work = f"a thin window: {kernels} {window}"
    return f"{work}; confidence {v.confidence:.2f}"


def marked(found: list[Finding], a: Anatomy, v: TraceVerdict) -> list[Finding]:
    """The findings, the verdict's own marked as a guess where the verdict is tentative."""
    if not v.tentative or v.bottleneck is None:
        return found
    lead = f"trace.{v.bottleneck.value}"
    return [
        msgspec.structs.replace(f, symptom=f"{f.symptom} (tentative: {why(a, v)})") if f.id == lead else f
        for f in found
    ]
