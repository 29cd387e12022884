"""What fixing a finding would recover, where the evidence allows an estimate: the share of the GPU's time (or of
the workload's throughput) now lost to it. Reports rank findings by it (`model.finding.triage_order`).

- a run's verdict on the host side (the GPU waits: input, launches, syncs, host work, copies, the allocator) or an
  underfilled GPU: the steady time it held x the share of that time the SMs were idle;
- a change of regime that slowed the workload: the share of the run after it x the rate it lost;
- a GPU held idle around the work: the start-up and shut-down share of the run.
Compute-bound, memory-bound and platform findings get none: what a fix gains there depends on the fix."""

from __future__ import annotations

from typing import Mapping

import msgspec

from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding
from gputriage.model.run import GpuVerdict

WAITING = {
    B.input_starved,
    B.launch_bound,
    B.sync_bound,
    B.host_bound,
    B.h2d_copy_bound,
    B.vram_pressure,
    B.underfilled,
    B.idle,
}


def _idle_share(v: GpuVerdict) -> float | None:
    busy = v.evidence.get("sm_active_pct", v.evidence.get("util_pct"))
    return None if busy is None else max(0.0, 1.0 - busy / 100.0)


def estimate(f: Finding, verdicts: Mapping[int, GpuVerdict] | None = None) -> float | None:
    """The share `f`'s fix would recover, or None where the evidence gives no estimate."""
    ev = f.evidence
    if f.id.startswith("run.") and verdicts:
        for v in verdicts.values():
            stated = f.id == f"run.{v.bottleneck.value}" if v.bottleneck else False
            stated = stated or (v.bottleneck == B.input_starved and f.id == "run.input_rate_bound")
            if v.bottleneck in WAITING and stated and f.subject == f"gpu.{v.gpu}":
                idle = _idle_share(v)
                return None if idle is None else v.share * idle
    if f.id == "run.regime_changed" and ev.get("rate_before") and ev.get("rate_after") is not None:
        lost = 1.0 - float(ev["rate_after"]) / float(ev["rate_before"])
        run_s = float(ev.get("before_s", 0)) + float(ev.get("after_s", 0))
        return max(0.0, lost) * float(ev.get("after_s", 0)) / run_s if lost > 0 and run_s else None
    if f.id == "run.idle_edges" and ev.get("run_s"):
        return (float(ev.get("startup_s") or 0) + float(ev.get("shutdown_s") or 0)) / float(ev["run_s"])
    return None


def with_impact(findings: list[Finding], verdicts: Mapping[int, GpuVerdict] | None = None) -> list[Finding]:
    """The findings, each with its estimated impact (one it already carries is kept)."""
    out = []
    for f in findings:
        share = f.impact if f.impact is not None else estimate(f, verdicts)
        out.append(
            f
            if share is None or share == f.impact
            else msgspec.structs.replace(f, impact=round(min(1.0, max(0.0, share)), 3))
        )
    return out
