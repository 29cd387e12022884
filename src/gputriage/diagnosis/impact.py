"""What fixing a finding would recover, where the evidence allows an estimate: the share of the GPU's time (or of
the workload's throughput) now lost to it. Reports rank findings by it (`model.finding.triage_order`).

A rule that can estimate it says so as it makes the finding (`impact=`: the rules of `run` and `trace` do). Here,
only for a trace finding stored before its rule carried it (a run store or a report of an earlier version): its
share of the profiled window, from the figures the rule wrote. Compute-bound, memory-bound and platform findings get
none: what a fix gains there depends on the fix."""

from __future__ import annotations

import msgspec

from gputriage.model.finding import Finding

TRACE_SHARES = {  # a trace finding's evidence key that holds its share of the window, in percent
    "trace.launch_bound": "launch_idle_pct",
    "trace.sync_bound": "sync_idle_pct",
    "trace.input_starved": "host_outside_ops_pct",
    "trace.h2d_copy_bound": "copies_pct",
    "trace.vram_pressure": "allocator_idle_pct",
    "trace.comm_bound": "exposed_comm_pct",
}


def estimate(f: Finding) -> float | None:
    """The share `f`'s fix would recover, or None where the evidence gives no estimate."""
    ev = f.evidence
    if f.id == "trace.host_bound":
        parts = ("host_in_ops_pct", "host_after_read_pct", "host_loop_pct")
        return sum(float(ev.get(k) or 0) for k in parts) / 100.0
    key = TRACE_SHARES.get(f.id)
    if key is not None and isinstance(ev.get(key), (int, float)):
        return float(ev[key]) / 100.0
    return None


def with_impact(findings: list[Finding]) -> list[Finding]:
    """The findings, each with its estimated impact (one it already carries is kept)."""
    out = []
    for f in findings:
        share = f.impact if f.impact is not None else estimate(f)
        out.append(
            f
            if share is None or share == f.impact
            else msgspec.structs.replace(f, impact=round(min(1.0, max(0.0, share)), 3))
        )
    return out
