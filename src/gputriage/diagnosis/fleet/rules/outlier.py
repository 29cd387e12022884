"""A node below the fleet: more than a robust spread under the fleet's median on a figure where higher is better
(a bf16 rate, a memory bandwidth, a PCIe link, a clock, a power limit).

Robust spread: a number of MAD-estimated standard deviations, never under a share of the median — identical nodes
do not make a 1% dip an outlier, and one bad node does not drag the median."""

from __future__ import annotations

from typing import Any

from gputriage.diagnosis.fleet.evidence import FLEET, FleetEvidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording
from gputriage.model.numbers import median

HIGHER_IS_BETTER = {  # a node's figure (`NodeFigures`) and its unit
    "bf16_tflops": "TFLOP/s",
    "memory_gbs": "GB/s",
    "pcie_gen": "",
    "pcie_width": "lanes",
    "sm_clock_max_mhz": "MHz",
    "power_limit_w": "W",
}
MIN_NODES = Threshold(
    "min_nodes",
    3,
    "nodes",
    "the fewest nodes reading a figure for one of them to be called out: two cannot say which one is off",
    "judgement",
)
MAD_SCALE = Threshold(
    "mad_scale",
    1.4826,
    "x the MAD",
    "the median absolute deviation of a normal distribution, as its standard deviation",
    "statistics: 1 / the normal distribution's 75th percentile (the MAD's consistency constant)",
)
SPREADS = Threshold(
    "spreads",
    3.0,
    "standard deviations",
    "how far under the fleet's median, in MAD-estimated standard deviations, a node is called out",
    "judgement (the usual robust outlier cut)",
)
FLOOR = Threshold(
    "floor_share",
    0.05,
    "of the median",
    "the least spread: nodes read alike within it (a clock or a rate a few percent apart is noise, not a fault)",
    "judgement: one H200's quick bench through Ray and alone differ by 1.2% (bf16) and 1.0% (memory read): "
    "tests/fixtures/h200/fleet_one_node_ray.json against bench_h200_quick.json",
)


def cut(values: list[float]) -> tuple[float, float, float]:
    """(the median, the median absolute deviation, the value under which a node is called out)."""
    mid = median(values)
    mad = median(abs(v - mid) for v in values)
    return mid, mad, mid - max(SPREADS.value * MAD_SCALE.value * mad, FLOOR.value * abs(mid))


def evaluate(ev: FleetEvidence) -> list[Finding]:
    out = []
    for figure, unit in HIGHER_IS_BETTER.items():
        read = ev.numbers(figure)
        if len(read) < MIN_NODES.value:
            continue
        mid, mad, under = cut([v for _, v in read])
        for node, value in read:
            if value >= under:
                continue
            evidence: dict[str, Any] = {
                "node": node,
                "figure": figure,
                "value": value,
                "unit": unit,
                "fleet_median": mid,
                "threshold": round(under, 2),
                "mad": round(mad, 3),
                "nodes": len(read),
            }
            fill = {**evidence, "unit": f" {unit}" if unit else ""}
            out.append(RULE.finding(evidence, subject=node, say=figure, fill=fill))
    return out


_BELOW = "{node}: {figure} {value:g}{unit} against a fleet median of {fleet_median:g} (threshold {threshold:g})"
_CHECK_IT = "; `gputriage check` on that node, against a healthy one, says which"

RULE = Rule(
    FindingSpec(
        id="fleet.outlier",
        step=5,
        severity=Severity.warn,
        commands=FLEET,
        needs=("a Ray cluster", "bench --quick for the bf16 rate and the memory bandwidth"),
        thresholds=(MIN_NODES, SPREADS, MAD_SCALE, FLOOR),
        symptom="A node falls below the fleet on a figure where higher is better",
        cause="Nodes built alike read alike: one more than a robust spread under the fleet's median has something of "
        "its own holding it back — its PCIe link, its clocks, its power limit, its GPU",
        decision="Run `gputriage check` and `gputriage bench` on that node and set them against a healthy node's",
        condition="a figure where higher is better (bf16 TFLOP/s and memory GB/s from bench --quick, PCIe generation "
        "and width, maximum SM clock, enforced power limit) read on at least {min_nodes:g} nodes, and a node's "
        "value < the fleet's median - max({spreads:g} x {mad_scale:g} x the median absolute deviation, "
        "{floor_share:.0%} of the median)",
        says={
            "bf16_tflops": Wording(
                symptom=_BELOW,
                cause="Its GPU multiplies slower than its peers': clocks held down (a power or thermal cap, a locked "
                "clock), a GPU that throttles, or another process on it during the bench",
                decision="Read that node's clocks, throttle reasons, power limit and GPU processes" + _CHECK_IT,
            ),
            "memory_gbs": Wording(
                symptom=_BELOW,
                cause="Its GPU reads memory slower than its peers': memory clocks held down, a GPU that throttles, "
                "or another process reading during the bench",
                decision="Read that node's clocks, throttle reasons and GPU processes" + _CHECK_IT,
            ),
            "pcie_gen": Wording(
                symptom=_BELOW,
                cause="Its GPU's PCIe link trained at an older generation than its peers' (a riser, a slot, a BIOS "
                "setting, or a link that retrained down after errors): host↔device copies are slower",
                decision="Reseat or move the card, check the BIOS PCIe setting and the kernel log for AER errors"
                + _CHECK_IT,
            ),
            "pcie_width": Wording(
                symptom=_BELOW,
                cause="Its GPU's PCIe link runs with fewer lanes than its peers' (a x8 slot, bifurcation, a riser, a "
                "bad contact): host↔device bandwidth is cut",
                decision="Reseat the card, check BIOS bifurcation, or move it to a full-width slot" + _CHECK_IT,
            ),
            "sm_clock_max_mhz": Wording(
                symptom=_BELOW,
                cause="Its GPU's maximum SM clock is under its peers' (a clock locked with nvidia-smi -lgc, an "
                "application clock set, or another SKU)",
                decision="Compare `nvidia-smi -q -d CLOCK` with a healthy node's and reset a locked clock "
                "(nvidia-smi -rgc, as root)",
            ),
            "power_limit_w": Wording(
                symptom=_BELOW,
                cause="Its GPUs' enforced power limit is under its peers' (lowered by hand or by a management "
                "policy): under load their clocks drop first",
                decision="Restore the default limit (nvidia-smi -pl, as root) or find the policy that lowered it",
            ),
        },
    ),
    evaluate,
)
