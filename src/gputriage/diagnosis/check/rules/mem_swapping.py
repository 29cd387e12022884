"""Swap in use with major faults: 'you are not training, you are negotiating with the kernel' (task 9)."""

from gputriage.diagnosis.check.base import CHECK, Evidence, gib
from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.thresholds import SWAP_IN
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording

MAJOR_FAULTS_PER_S = Threshold(
    "major_faults_per_s",
    50.0,
    "faults/s",
    "major page faults at which the host pages actively",
    "GPU triage playbook, task 9 (vmstat); judgement",
)


def evaluate(ev: Evidence) -> list[Finding]:
    used = ev.get("host.swap.used_bytes")
    if not used:
        return []
    faults, swapin = ev.get("host.vm.major_faults_per_s", 0.0), ev.get("host.vm.swap_in_pages_per_s", 0.0)
    evidence = {
        "host.swap.used_bytes": used,
        "swap_used": gib(used),
        "host.vm.major_faults_per_s": faults,
        "host.vm.swap_in_pages_per_s": swapin,
    }
    if faults >= MAJOR_FAULTS_PER_S.value or swapin >= SWAP_IN.value:
        return [RULE.finding(evidence, severity=Severity.warn, subject="host")]
    return [RULE.finding(evidence, severity=Severity.info, subject="host", say="swapped_out")]


RULE = Rule(
    FindingSpec(
        id="mem.swapping",
        step=4,
        severity=Severity.warn,
        symptom="The host is swapping",
        cause="Host memory is short: pages of the job or its data loaders are swapped out and faulted back in; the CPU "
        "pages instead of feeding the GPU",
        decision="Reduce host memory use: smaller batch or prefetch, fewer/lighter DataLoader workers, or add RAM",
        commands=CHECK,
        condition="swap used > 0 and (major faults >= {major_faults_per_s:g}/s or swap-in >= {swap_in_pages_per_s:g} "
        "pages/s) → warn; swap used alone → info",
        thresholds=(MAJOR_FAULTS_PER_S, SWAP_IN),
        says={
            "swapped_out": Wording(
                symptom="Swap holds pages, but none are being read back now",
                cause="Memory was short at some point; not costly while nothing swaps in",
                decision="Watch for swap-in during the job (`gputriage watch`); keep host memory headroom",
            )
        },
    ),
    evaluate,
)
