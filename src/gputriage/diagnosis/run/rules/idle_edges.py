"""The GPU held but idle before its first kernel and after its last (start-up, shut-down) of a command run."""

from __future__ import annotations

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RunEvidence
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording

IDLE_EDGES_MIN = Threshold(
    "idle_edges_min_s", 30.0, "s", "start-up plus shut-down long enough to be worth a finding", "judgement"
)
IDLE_EDGES_SHARE = Threshold(
    "idle_edges_min_share",
    0.25,
    "share of the run",
    "start-up plus shut-down share of the run worth a finding",
    "judgement",
)


def evaluate(ev: RunEvidence) -> list[Finding]:
    """Each GPU whose start-up and shut-down together last long enough, and long against the run. What fixing it
    recovers: their share of the run."""
    if not ev.workload or not ev.steady or ev.run_s <= 0:
        return []
    out = []
    run_s = round(ev.run_s, 1)
    for v in ev.verdicts.values():
        start, end = v.startup_s, v.shutdown_s
        if start + end < IDLE_EDGES_MIN.value or (start + end) / ev.run_s < IDLE_EDGES_SHARE.value:
            continue
        out.append(
            RULE.finding(
                {"startup_s": start, "shutdown_s": end, "run_s": run_s},
                subject=f"gpu.{v.gpu}",
                say="held",
                fill={"gpu": v.gpu, "idle_share": (start + end) / ev.run_s, "startup_s": start, "shutdown_s": end},
                impact=(start + end) / run_s if run_s else None,
            )
        )
    return out


RULE = Rule(
    FindingSpec(
        id="run.idle_edges",
        step=2,
        severity=Severity.info,
        commands=("run",),
        needs=("gpu",),
        symptom="The GPU is held but idle before its first kernel and after its last",
        cause="Imports, data and model loading, compilation before the work; saving, joining workers and tearing "
        "down after it: the GPU is paid for and idle",
        decision="Load once and keep the process (a long-lived worker or server), keep torch.compile's cache "
        "between runs (TORCHINDUCTOR_CACHE_DIR), load weights straight to the GPU, checkpoint asynchronously; profile "
        "the start-up on the host (py-spy, pyinstrument)",
        condition="start-up + shut-down >= {idle_edges_min_s:g} s and >= {idle_edges_min_share:.0%} of the run",
        thresholds=(IDLE_EDGES_MIN, IDLE_EDGES_SHARE),
        says={
            "held": Wording(
                symptom="GPU {gpu} held but idle {idle_share:.0%} of the run: {startup_s:.0f} s before its first "
                "kernel, {shutdown_s:.0f} s after its last"
            )
        },
    ),
    evaluate,
)
