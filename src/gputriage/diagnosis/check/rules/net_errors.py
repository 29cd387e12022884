"""Interface errors and drops (playbook task 17)."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold

MIN_BAD_PACKETS = Threshold(
    "min_bad_packets",
    100,
    "packets",
    "errors or drops since boot worth a finding",
    "GPU triage playbook, task 17 (ip -s link); judgement",
)
BAD_RATIO = Threshold(
    "bad_packet_ratio", 1e-4, "share", "share of bad packets among all packets at which transfers retry", "judgement"
)


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for iface, c in (ev.get("host.net.interfaces") or {}).items():
        bad = c["rx_errors"] + c["rx_drops"] + c["tx_errors"] + c["tx_drops"]
        packets = c["rx_packets"] + c["tx_packets"]
        if bad >= MIN_BAD_PACKETS.value and packets and bad / packets >= BAD_RATIO.value:
            out.append(
                RULE.finding(
                    {"interface": iface, **c, "bad_ratio": round(bad / packets, 6)},
                    severity=Severity.warn,
                    subject=f"net.{iface}",
                )
            )
    return out


RULE = Rule(
    FindingSpec(
        id="net.errors",
        step=4,
        severity=Severity.warn,
        symptom="A network interface reports errors or dropped packets",
        cause="Drops and errors turn into retried transfers and bursty data loading when data is streamed, and into "
        "slow collectives across nodes",
        decision="Fix network health (cabling, ring buffers, MTU) or cache the data locally",
        commands=CHECK,
        condition=">= {min_bad_packets:g} bad packets and >= {bad_packet_ratio:g} of all packets since boot",
        thresholds=(MIN_BAD_PACKETS, BAD_RATIO),
    ),
    evaluate,
)
