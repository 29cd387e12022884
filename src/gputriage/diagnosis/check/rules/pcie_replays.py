"""PCIe replay counter: link-level retransmissions."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold

MIN_REPLAYS = Threshold(
    "min_replays",
    100,
    "replays",
    "PCIe replay count since boot that says the link retransmits",
    "NVML nvmlDeviceGetPcieReplayCounter; judgement",
)


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for i in ev.gpus:
        n = ev.gpu(i, "pcie.replay_count")
        if n is not None and n >= MIN_REPLAYS.value:
            out.append(RULE.finding({f"gpu.{i}.pcie.replay_count": n}, severity=Severity.warn, subject=f"gpu.{i}"))
    return out


RULE = Rule(
    FindingSpec(
        id="pcie.replays",
        step=5,
        severity=Severity.warn,
        symptom="The GPU's PCIe link retransmits packets",
        cause="Signal-integrity problems on the link: each replay costs bandwidth and often precedes link failures",
        decision="Reseat the card, replace risers/cables, check slot and BIOS settings",
        commands=CHECK,
        condition="replay counter >= {min_replays:g} since boot",
        thresholds=(MIN_REPLAYS,),
        needs=("gpu",),
    ),
    evaluate,
)
