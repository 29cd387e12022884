"""PCIe link narrower than it can train (playbook task 3)."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for i in ev.gpus:
        loaded = ev.gpu(i, "pcie.link_width.loaded")
        width = loaded if loaded is not None else ev.gpu(i, "pcie.link_width.current")
        wmax = ev.gpu(i, "pcie.link_width.max")
        if width is None or not wmax or width >= wmax:
            continue
        evidence = {
            f"gpu.{i}.pcie.link_width": width,
            f"gpu.{i}.pcie.link_width.max": wmax,
            "read": "under load" if loaded is not None else "at idle",
        }
        out.append(
            RULE.finding(
                evidence, severity=Severity.warn, subject=f"gpu.{i}", say="narrow", fill={"width": width, "max": wmax}
            )
        )
    return out


RULE = Rule(
    FindingSpec(
        id="pcie.link_width_degraded",
        step=5,
        severity=Severity.warn,
        symptom="The GPU's PCIe link runs with fewer lanes than it supports",
        cause="A x16 card in a x8 slot, BIOS bifurcation, a riser, or a bad contact: host↔device bandwidth is halved",
        decision="If the workload moves data (transfers, multi-GPU), reseat the card, check BIOS bifurcation, or move "
        "it to a full x16 slot; `gputriage bench` measures the copy rate",
        commands=CHECK,
        condition="link width (read under load when possible) < max width",
        needs=("gpu",),
        says={"narrow": Wording(symptom="PCIe link trained at x{width} of x{max}")},
    ),
    evaluate,
)
