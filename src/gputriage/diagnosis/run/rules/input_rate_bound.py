"""An input_starved GPU whose input arrives at its own pace from outside the process (a paced source, a socket,
requests): neither the host nor the GPU sets the pace, the input rate does. It words the GPU's verdict, stated once
there (`stated.VerdictRule`), not among the findings."""

from __future__ import annotations

from typing import Any, Mapping

from gputriage.diagnosis.bottlenecks import severity_of
from gputriage.diagnosis.run.base import RUN, RunEvidence
from gputriage.diagnosis.run.host_side import (
    INPUT_READ,
    LOADER_WAITS,
    OTHERS_BUSY,
    RATE_WAITS,
    stack_shares,
    waits_for_input,
    waits_on_loader,
)
from gputriage.diagnosis.run.host_stacks import main_line, most_at
from gputriage.diagnosis.run.stated import VerdictRule, waiting_share
from gputriage.diagnosis.thresholds import IOWAIT
from gputriage.inworkload.stack_categories import INPUT_WAIT, LOADER_FIELD
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, FindingSpec, Wording


def paced(evidence: Mapping[str, float]) -> bool:
    """The main thread waited for input from outside the process most of the time (no DataLoader), nothing of the
    workload busy beside it, little read, no iowait: the input rate sets the pace."""
    shares = stack_shares(evidence)
    if shares is None:
        return False
    return (
        waits_for_input(shares)
        and not waits_on_loader(
            shares[INPUT_WAIT],
            evidence.get(LOADER_FIELD),
            evidence.get("workload_cpu_pct"),
            evidence.get("gpu_process_cpu_pct"),
        )
        and (evidence.get("host_others_busy") or 0.0) < OTHERS_BUSY.value
        and (evidence.get("read_mb_per_s") or 0.0) < INPUT_READ.value
        and (evidence.get("iowait_pct") or 0.0) < IOWAIT.value
    )


def evaluate(ev: RunEvidence) -> list[Finding]:
    """Each input_starved GPU whose workload waits at the input's pace, with the line it waits at and the headroom
    its GPU has. What fixing it recovers: the verdict's (`stated.waiting_share`)."""
    out = []
    for v in ev.verdicts.values():
        shares = stack_shares(v.evidence)
        if v.bottleneck != B.input_starved or shares is None or not paced(v.evidence):
            continue
        util, at = v.evidence.get("util_pct"), main_line(v.lines)
        fill: dict[str, Any] = {"gpu": v.gpu, "share": v.share, "input_wait": shares[INPUT_WAIT]}
        fill["where"] = f" ({most_at(at)})" if at else ""
        if util is not None:
            fill |= {"util_pct": util, "headroom_pct": 100 - util}
        say = "paced" if util is not None else "paced_unmeasured"
        out.append(RULE.finding(dict(v.evidence), subject=f"gpu.{v.gpu}", say=say, fill=fill, impact=waiting_share(v)))
    return out


SYMPTOM = "GPU {gpu}: the input rate is the limit ({share:.0%} of steady time)"
WAITS = (
    "the main thread waits for input from outside the process {input_wait:.0%} of the time{where}, nothing busy "
    "beside it: the input rate is the limit"
)
DECIDE = (
    ": batch requests (answer several per step), share the GPU (several models or jobs on it: MPS, MIG), or use a "
    "smaller one"
)
RULE = VerdictRule(
    FindingSpec(
        id="run.input_rate_bound",
        step=4,
        severity=severity_of(B.input_starved),
        commands=RUN,
        needs=("gpu", "workload"),
        symptom="The GPU waits for input that arrives slowly from outside the process",
        cause="The workload's main thread spends most of its time blocked for input from outside the process (a "
        "queue fed by a paced source, a socket, requests) while no thread of it is busy and little is read: neither "
        "the host nor the GPU sets the pace, the input rate does",
        decision="The input rate is the limit: batch requests (answer several per step), share the GPU (several "
        "models or jobs on it: MPS, MIG), or use a smaller one",
        condition="the verdict is input_starved and the main thread of the Python workload (its stack sampler) waits "
        "for input on no DataLoader most of the steady time, no Python thread busy beside it, little read, no "
        "iowait",
        thresholds=(RATE_WAITS, LOADER_WAITS, OTHERS_BUSY, INPUT_READ, IOWAIT),
        says={
            "paced": Wording(
                symptom=SYMPTOM,
                cause="GPU-Util {util_pct:.0f}% while " + WAITS,
                decision="The input rate is the limit: the GPU has {headroom_pct:.0f}% headroom (GPU-Util "
                "{util_pct:.0f}%)" + DECIDE,
            ),
            "paced_unmeasured": Wording(
                symptom=SYMPTOM,
                cause="While " + WAITS,
                decision="The input rate is the limit: the GPU has headroom" + DECIDE,
            ),
        },
    ),
    evaluate,
)
