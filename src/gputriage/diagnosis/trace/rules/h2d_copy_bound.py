"""Host↔device copies take the window: from pageable memory (staged, blocking), from pinned memory taking turns
with the kernels, or at the link's speed with little else to do. Copies read back get the advice for reading back."""

from gputriage.diagnosis.bottlenecks import D2H_COPY_DECISION
from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.trace.base import FINDING_MIN, TRACE, verdict_words
from gputriage.diagnosis.trace.evidence import RankEvidence
from gputriage.diagnosis.trace.verdict import d2h_us, mostly_d2h
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording
from gputriage.trace import kernel_kinds as kk

PAGEABLE_MIN = Threshold(
    "pageable_min_pct",
    2.0,
    "% of the window",
    "copies from pageable memory worth a warning (they block the host and run at a fraction of the link's speed)",
    "judgement",
)
SYMPTOM = (
    "Host↔device copies take {copies_pct}% of the window ({pageable_pct}% from pageable memory, {d2h_pct}% device "
    "to host)"
)
# the cause and decision of each kind of copying ("": the entry's decision)
KINDS: dict[str, tuple[str, str]] = {
    "pageable": (
        "Copies from pageable memory are staged through a driver buffer and run at a fraction of the link's speed, "
        "and they block the host",
        "",
    ),
    # pinned copies that no kernel runs beside, beside compute they could overlap
    "pinned": (
        "The copies come from pinned memory at the link's speed, but no kernel runs beside them: they take turns "
        "with the compute on one stream, and the SMs idle while data crosses the link",
        "Overlap the copies with compute: copy the next batch on a side stream while this one computes "
        "(non_blocking=True, an event the compute stream waits on, as a prefetcher does), or keep the data on the "
        "GPU; send fewer bytes (uint8/bf16 on the wire, decode on the GPU)",
    ),
    # pinned copies with little compute to overlap them with: the link is the limit
    "link": (
        "The copies come from pinned memory at the link's speed, with little compute to overlap them with",
        "The link is the limit: send fewer bytes (uint8/bf16 on the wire, decode on the GPU), or keep the data on "
        "the GPU between steps",
    ),
}
SEVERITY = {"pageable": Severity.warn, "pinned": Severity.warn, "link": Severity.info}


def kind_of(pageable_pct: float, copies_pct: float, other_busy_pct: float) -> str:
    """Pageable copies warn; pinned ones warn where overlapping them with the rest of the GPU's work would save
    `finding_min_pct` of the window or more (the shorter of the two); otherwise the link is the limit."""
    if pageable_pct >= PAGEABLE_MIN.value:
        return "pageable"
    if min(copies_pct, other_busy_pct) >= FINDING_MIN.value:
        return "pinned"
    return "link"


def evaluate(ev: RankEvidence) -> list[Finding]:
    a = ev.window
    pageable_us = a.busy_of(kk.H2D_PAGEABLE) + a.busy_of(kk.D2H_PAGEABLE)
    copies_us = pageable_us + a.busy_of(kk.H2D_PINNED) + a.busy_of(kk.D2H_PINNED)
    pageable, copies = ev.pct(pageable_us), ev.pct(copies_us)
    if pageable < PAGEABLE_MIN.value and copies < FINDING_MIN.value:
        return []
    kind = kind_of(pageable, copies, ev.pct(a.busy_us - copies_us))
    figures = {
        "copies_pct": copies,
        "pageable_pct": pageable,
        "h2d_pinned_pct": ev.busy_pct(kk.H2D_PINNED),
        "d2h_pct": ev.pct(d2h_us(a)),
    }
    say = f"{kind}_read_back" if mostly_d2h(a) else kind
    return [
        RULE.finding(figures, subject=ev.subject, severity=SEVERITY[kind], say=say, fill=figures, impact=copies / 100)
    ]


def _says() -> dict[str, Wording]:
    says = {}
    for kind, (cause, decision) in KINDS.items():
        says[kind] = Wording(symptom=SYMPTOM, cause=cause, decision=decision)
        says[f"{kind}_read_back"] = Wording(symptom=SYMPTOM, cause=cause, decision=D2H_COPY_DECISION)
    return says


RULE = Rule(
    FindingSpec(
        id="trace.h2d_copy_bound",
        **verdict_words(B.h2d_copy_bound),
        severity=Severity.warn,
        commands=TRACE,
        condition="pageable copies >= {pageable_min_pct:g}% of the window (warn), or all host-device copies >= "
        "{finding_min_pct:g}% (info)",
        thresholds=(PAGEABLE_MIN, FINDING_MIN),
        needs=("trace",),
        says=_says(),
    ),
    evaluate,
)
