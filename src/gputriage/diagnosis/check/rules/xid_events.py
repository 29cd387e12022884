"""Xid events in the kernel log: the hardware/software blame separator (playbook task 12)."""

from collections import Counter

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording

# Codes that make the GPU untrustworthy until acted on.
CRITICAL_XIDS = {48, 62, 64, 74, 79, 92, 95, 119, 120, 140, 143, 154}

DECISIONS = {
    "hardware": "Drain the GPU and open a hardware case (RMA) if it repeats; check ECC/row-remap state; reset before "
    "reuse",
    "platform": "Check power delivery (PSU, cables), risers and PCIe slot seating, and temperatures; cap power while "
    "investigating",
    "driver": "Update to a known-good driver branch; collect nvidia-bug-report.sh if it repeats",
    "application": "Debug the application: run with CUDA_LAUNCH_BLOCKING=1 and compute-sanitizer to find the bad "
    "access; the GPU is likely fine",
    "unknown": "Look the code up in NVIDIA's Xid catalog",
}
# the words of each blame, and of a critical code of it ("hardware_critical")
SAYS = {
    blame + kind: Wording(symptom="Xid {xid} in the kernel log: {meaning}", cause=cause, decision=decision)
    for blame, decision in DECISIONS.items()
    for kind, cause in (
        ("", "Points to the {blame}"),
        ("_critical", "Points to the {blame} — the GPU is not trustworthy until acted on"),
    )
}


def evaluate(ev: Evidence) -> list[Finding]:
    events = ev.get("kernel.xid_events") or []
    out = []
    for code, count in sorted(Counter(e["code"] for e in events).items()):
        first = next(e for e in events if e["code"] == code)
        sev = Severity.critical if code in CRITICAL_XIDS else Severity.warn
        out.append(
            RULE.finding(
                {
                    "xid": code,
                    "count": count,
                    "meaning": first["meaning"],
                    "blame": first["blame"],
                    "pci": first["pci"],
                    "example": first["text"],
                },
                severity=sev,
                subject=f"xid.{code}",
                say=first["blame"] + ("_critical" if sev == Severity.critical else ""),
                fill={"xid": code, "meaning": first["meaning"], "blame": first["blame"]},
            )
        )
    return out


RULE = Rule(
    FindingSpec(
        id="xid.event",
        step=5,
        severity=Severity.warn,
        symptom="NVIDIA Xid errors in the kernel log",
        cause="The driver reported a GPU fault; the code tells whether hardware, platform, driver or the application "
        "is to blame",
        decision="Act on the blame: drain and RMA for hardware codes, power/PCIe checks for platform codes, driver "
        "update for driver codes, debug the app for application codes",
        commands=CHECK,
        condition="any 'NVRM: Xid' line; critical codes: " + ", ".join(map(str, sorted(CRITICAL_XIDS))),
        needs=("kernel_log",),
        says=SAYS,
    ),
    evaluate,
)
