"""The rank the others wait for runs on a GPU that slowed down: its clocks lower than its peers' (triage step 2)."""

from __future__ import annotations

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RUN, RunEvidence
from gputriage.diagnosis.run.rank_causes import CLOCK_GAP, THROTTLED, gpu_throttled, occurrence
from gputriage.diagnosis.run.rank_compare import MIN_WAIT, STRAGGLER_SCORE, STRAGGLING
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording
from gputriage.model.numbers import median


def evaluate(ev: RunEvidence) -> list[Finding]:
    """The straggler, where its GPU slowed down and clocked lower than its peers'."""
    r = ev.ranks
    if r is None or r.straggler is None or not gpu_throttled(r):
        return []
    evidence, fill, severity, impact = occurrence(r)
    g = r.straggler.gpu
    assert g is not None and g.sm_clock_mhz is not None
    peers = [p.gpu.sm_clock_mhz for p in r.peers if p.gpu is not None and p.gpu.sm_clock_mhz]
    evidence["gpu"] = {"index": g.index, "sm_clock_mhz": g.sm_clock_mhz, "peers_sm_clock_mhz": median(peers)}
    fill |= {"gpu": g.index, "clock": g.sm_clock_mhz, "peers_clock": median(peers)}
    fill["slowed"] = max(g.throttled_share or 0.0, g.power_capped_share or 0.0)
    fill["why"] = "a thermal or hardware slowdown" if (g.throttled_share or 0.0) >= THROTTLED.value else "its power cap"
    return [RULE.finding(evidence, subject=f"rank.{fill['rank']}", severity=severity, fill=fill, impact=impact)]


RULE = Rule(
    FindingSpec(
        id="run.straggler_gpu_throttled",
        step=2,
        severity=Severity.warn,
        commands=RUN,
        needs=("ranks", "gpu"),
        symptom="One rank holds the others back: its GPU runs at lower clocks than theirs",
        cause="The rank's GPU slowed down (a thermal, hardware or power-cap slowdown): its kernels take longer, and "
        "every other rank waits for it in the next collective",
        decision="`gputriage check` on that node: the GPU's temperature, power limit and clock-event reasons; its "
        "cooling (fans, airflow, a blocked inlet) or power capping",
        condition=STRAGGLING + ", its GPU slowed down in >= {straggler_throttled_share:.0%} of "
        "the samples and clocks >= {straggler_clock_gap:.0%} below its peers'",
        thresholds=(STRAGGLER_SCORE, MIN_WAIT, THROTTLED, CLOCK_GAP),
        says={
            "default": Wording(
                symptom="Rank {rank} holds the others back ({pattern}): its GPU {gpu} runs at {clock:.0f} MHz, its "
                "peers' at {peers_clock:.0f} MHz ({why} {slowed:.0%} of the time)",
                cause="Rank {rank}'s GPU {gpu} slowed down ({why}): its kernels take longer and the other ranks "
                "wait for it in the next collective, {others_wait:.0%} of their time",
                decision="`gputriage check` on rank {rank}'s node: GPU {gpu}'s temperature, power limit and "
                "clock-event reasons; its cooling (fans, airflow) or power capping",
            )
        },
    ),
    evaluate,
)
