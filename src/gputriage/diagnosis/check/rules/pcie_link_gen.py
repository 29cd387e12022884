"""PCIe link generation below its max while loaded."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for i in ev.gpus:
        gen, gmax = ev.gpu(i, "pcie.link_gen.loaded"), ev.gpu(i, "pcie.link_gen.max")
        if gen is None:
            idle = ev.gpu(i, "pcie.link_gen.current")
            if idle is not None and gmax and idle < gmax:
                out.append(
                    RULE.finding(
                        {f"gpu.{i}.pcie.link_gen.current": idle, f"gpu.{i}.pcie.link_gen.max": gmax, "read": "at idle"},
                        severity=Severity.info,
                        subject=f"gpu.{i}",
                        say="at_idle",
                        fill={"gen": idle, "max": gmax},
                    )
                )
            continue
        if gmax and gen < gmax:
            out.append(
                RULE.finding(
                    {f"gpu.{i}.pcie.link_gen.loaded": gen, f"gpu.{i}.pcie.link_gen.max": gmax, "read": "under load"},
                    severity=Severity.warn,
                    subject=f"gpu.{i}",
                    say="under_load",
                    fill={"gen": gen, "max": gmax},
                )
            )
    return out


RULE = Rule(
    FindingSpec(
        id="pcie.link_gen_degraded",
        step=5,
        severity=Severity.warn,
        symptom="The GPU's PCIe link runs at a lower generation than it supports, under load",
        cause="Slot or riser limited, BIOS forced a lower generation, or signal problems made the link retrain lower: "
        "each generation down halves bandwidth",
        decision="Check BIOS PCIe speed settings, risers and slot; compare with `gputriage bench` H2D bandwidth",
        commands=CHECK,
        condition="generation read under load < max generation (at idle: info only)",
        needs=("gpu",),
        says={
            "under_load": Wording(symptom="PCIe link at Gen{gen} of Gen{max} under load"),
            "at_idle": Wording(
                symptom="PCIe link at Gen{gen} of Gen{max}, read at idle",
                cause="Links downshift at idle to save power; this reading cannot tell a degraded link from a resting "
                "one",
                decision="Re-run check where torch can load the GPU, or read `nvidia-smi -q` while a job runs",
            ),
        },
    ),
    evaluate,
)
