"""Ranks of a distributed job waited in a collective for others that did not arrive (said while the job ran)."""

from __future__ import annotations

import time

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RUN, RunEvidence
from gputriage.diagnosis.run.hang import HANG_AFTER
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def evaluate(ev: RunEvidence) -> list[Finding]:
    """Each hang said while the job ran, with the ranks that did not arrive and where they were."""
    r = ev.ranks
    out = []
    for h in r.report.hangs if r is not None else []:
        plural = "s" if len(h.missing) > 1 else ""
        fill = {
            "waiting": ", ".join(map(str, h.waiting)),
            "missing": ", ".join(map(str, h.missing)),
            "waited_s": h.waited_s,
            "at": time.strftime("%H:%M:%S", time.localtime(h.t_s)),
            "plural": plural,
            "wplural": "s" if len(h.waiting) > 1 else "",
            "where": "; ".join(f"rank {k}: {frames[0]}" for k, frames in h.stacks.items() if frames) or "no stack read",
        }
        evidence = {"waiting": h.waiting, "missing": h.missing, "waited_s": h.waited_s, "stacks": h.stacks}
        evidence |= {"doing": h.doing, "t_s": h.t_s, "node": h.node}
        say = "missing" if h.missing else "all"
        subject = f"rank.{h.missing[0]}" if h.missing else "ranks"
        out.append(RULE.finding(evidence, subject=subject, say=say, fill=fill))
    return out


RULE = Rule(
    FindingSpec(
        id="run.rank_hang",
        step=2,
        severity=Severity.critical,
        commands=RUN,
        needs=("ranks",),
        symptom="The job hung: ranks waited in a collective for ranks that did not arrive",
        cause="A collective ends only when every rank has entered it: the ranks that did not arrive (stuck in I/O, a "
        "checkpoint, a deadlock, an exception caught without leaving the job) stop all the others",
        decision="Look at where the missing ranks are (their stacks: `py-spy dump --pid PID`); for NCCL, the flight "
        "recorder (TORCH_NCCL_TRACE_BUFFER_SIZE) names the collective each rank is in",
        condition="ranks wait in a collective >= {hang_after_s:g} s while the others are elsewhere (or every rank "
        "waits)",
        thresholds=(HANG_AFTER,),
        says={
            "missing": Wording(
                symptom="The job hung at {at}: rank{plural} {missing} did not arrive, rank{wplural} {waiting} "
                "waited {waited_s:.0f} s in a collective ({where})",
                decision="Look at where rank{plural} {missing} stood ({where}): I/O, a checkpoint, a deadlock or an "
                "exception caught without leaving the job; py-spy dump --pid PID shows it live",
            ),
            "all": Wording(
                symptom="The job hung at {at}: every rank ({waiting}) waited {waited_s:.0f} s in a collective "
                "({where})",
                cause="Every rank waits in a collective: they called different collectives (or in a different order), "
                "or a rank on another node did not arrive, or the network between them failed",
                decision="Compare the collectives the ranks are in (NCCL's flight recorder, "
                "TORCH_NCCL_TRACE_BUFFER_SIZE; TORCH_DISTRIBUTED_DEBUG=DETAIL for mismatched collectives) and the "
                "other nodes' ranks",
            ),
        },
    ),
    evaluate,
)
