"""Interface errors and drops (seed task 17)."""

from gputriage.model.finding import Finding, Severity
from gputriage.rules.base import Evidence, Rule

MIN_BAD_PACKETS = 100
BAD_RATIO = 1e-4


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for iface, c in (ev.get("host.net.interfaces") or {}).items():
        bad = c["rx_errors"] + c["rx_drops"] + c["tx_errors"] + c["tx_drops"]
        packets = c["rx_packets"] + c["tx_packets"]
        if bad >= MIN_BAD_PACKETS and packets and bad / packets >= BAD_RATIO:
            out.append(RULE.finding(Severity.warn, {"interface": iface, **c, "bad_ratio": round(bad / packets, 6)},
                                    subject=f"net.{iface}"))
    return out


RULE = Rule(
    id="net.errors", step=4,
    symptom="A network interface reports errors or dropped packets",
    cause="Drops and errors turn into retried transfers and bursty data loading when data is streamed, and into slow "
          "collectives across nodes",
    decision="Fix network health (cabling, ring buffers, MTU) or cache the data locally",
    threshold=f">= {MIN_BAD_PACKETS} bad packets and >= {BAD_RATIO:g} of all packets since boot",
    evaluate=evaluate,
)
