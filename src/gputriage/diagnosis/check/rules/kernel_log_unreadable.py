"""The kernel log could not be read: Xid checks were not done."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    why = ev.unavailable("kernel.xid_events")
    if why is not None and why.reason in ("no_permission", "not_found", "timeout", "error"):
        return [RULE.finding({"kernel.xid_events": str(why)}, severity=Severity.info, subject="host")]
    return []


RULE = Rule(
    FindingSpec(
        id="kernel.log_unreadable",
        step=5,
        severity=Severity.info,
        symptom="The kernel log could not be read, so Xid and PCIe errors were not checked",
        cause="dmesg is restricted to root (kernel.dmesg_restrict=1) or the container has no access to it",
        decision="Re-run with privileges (sudo gputriage check), or run it on the host rather than in the container",
        commands=CHECK,
        condition="dmesg and /dev/kmsg both refused or missing",
    ),
    evaluate,
)
