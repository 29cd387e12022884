"""Each GPU's verdict stated once, in the verdict (`GpuVerdict.finding`, its severity, its impact, how to verify the
fix, its words), not repeated among the run's findings: the finding of its label's entry (`run.<bottleneck>`), or of
a rule that words it more precisely (`VerdictRule`: `run.input_rate_bound`, an input_starved GPU whose input arrives
at its own pace). What fixing a host-side or underfilled verdict recovers: the steady time it held x the share of
that time the SMs were idle."""

from __future__ import annotations

from typing import Iterable

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RunEvidence
from gputriage.diagnosis.run.compile import EAGER_LOOKING, eager_fallback
from gputriage.diagnosis.run.labels import VERDICT_SPECS
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, Severity, Threshold
from gputriage.model.numbers import MIB
from gputriage.model.run import GpuStatic, GpuVerdict
from gputriage.model.specs import pcie_link_gbs

WAITING = {  # verdicts whose fix gives the GPU back the time it waited
    B.input_starved,
    B.launch_bound,
    B.sync_bound,
    B.host_bound,
    B.h2d_copy_bound,
    B.vram_pressure,
    B.underfilled,
    B.idle,
}
LINK_SATURATED = Threshold(
    "link_saturated_share",
    0.7,
    "share of the link",
    "host-to-device traffic at which copies already run at the PCIe link's speed",
    "pinned copies reach 85-88% of the raw link rate (bench on an H200); judgement for 70%",
)


class VerdictRule(Rule[RunEvidence]):
    """A rule whose finding is a GPU's verdict in more precise words than its label's entry: stated in the verdict,
    once, in place of the label's finding, not among the run's findings."""


def waiting_share(v: GpuVerdict) -> float | None:
    """What fixing a verdict on which the GPU waits would recover: the share of the steady time it held x the share
    of that time the SMs were idle (SM activity, else GPU-Util); None for other verdicts, or without a reading."""
    if v.bottleneck not in WAITING:
        return None
    busy = v.evidence.get("sm_active_pct", v.evidence.get("util_pct"))
    return None if busy is None else v.share * max(0.0, 1.0 - busy / 100.0)


def _link_saturated(v: GpuVerdict, gpu: GpuStatic) -> bool:
    rx = v.evidence.get("pcie_rx_mib_per_s")
    if not rx or not gpu.pcie_gen_max or not gpu.pcie_width_max:
        return False
    return rx * MIB / 1e9 >= LINK_SATURATED.value * pcie_link_gbs(gpu.pcie_gen_max, gpu.pcie_width_max)


def verdict_finding(v: GpuVerdict, gpu: GpuStatic) -> Finding | None:
    """The finding of a verdict's label entry, in the verdict's words (its summary and decision, the causes it left
    open); copies already at the link's capacity are said so."""
    if v.bottleneck is None or v.bottleneck not in VERDICT_SPECS:
        return None
    b = v.bottleneck
    spec = VERDICT_SPECS[b]
    severity, cause, decision = spec.severity, v.summary, v.decision
    if b == B.h2d_copy_bound and _link_saturated(v, gpu):
        severity = Severity.info
        cause += " — at the PCIe link's capacity"
        decision = (
            "Copies already run at the link's speed: send fewer bytes (uint8/bf16 on the wire, decode on the "
            "GPU), overlap them with compute, or keep data resident on the GPU"
        )
    if v.undecided_between:
        cause += f" — the sampler cannot tell {' from '.join(x.value for x in v.undecided_between)} apart"
        decision += "; run again with `gputriage run --profile` to separate them"
    return spec.finding(
        v.evidence,
        subject=f"gpu.{v.gpu}",
        severity=severity,
        symptom=f"GPU {v.gpu}: {b.value.replace('_', ' ')} ({v.share:.0%} of steady time)",
        cause=cause,
        decision=decision,
        impact=waiting_share(v),
    )


def verdict_findings(ev: RunEvidence, found: list[Finding], rules: Iterable[Rule[RunEvidence]]) -> list[Finding]:
    """The finding that states each GPU's verdict: a `VerdictRule`'s about that GPU where one was found, else its
    label's."""
    restating = {r.id for r in rules if isinstance(r, VerdictRule)}
    out = []
    for i, v in ev.verdicts.items():
        own = next((f for f in found if f.id in restating and f.subject == f"gpu.{i}"), None)
        stated = own or verdict_finding(v, ev.static(i))
        out += [stated] if stated is not None else []
    return out


def state(ev: RunEvidence, stated: list[Finding]) -> None:
    """Each verdict stated in its finding (`verdict_findings`, finished: impact, verifying command): its id,
    severity, gain and verification, and its words where it is decided (the causes left open are said beside a
    verdict that is not, not in its words). Where dynamo gave up on a compiled function and the run looks launch- or
    sync-bound, that comes first in each decision."""
    by_gpu = {f.subject: f for f in stated}
    for v in ev.verdicts.values():
        f = by_gpu.get(f"gpu.{v.gpu}")
        if f is None:
            continue
        v.finding, v.severity, v.impact, v.verify = f.id, f.severity, f.impact, f.verify
        if not v.undecided_between:
            v.summary, v.decision = f.cause, f.decision
    fell_back = eager_fallback(ev.rec.compile)
    looks = {ev.verdict.bottleneck, *(v.bottleneck for v in ev.verdicts.values())}
    for v in ev.verdicts.values() if fell_back and looks & EAGER_LOOKING else ():  # a compiled model run eagerly
        v.decision = fell_back + v.decision
