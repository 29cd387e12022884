"""A fleet's nodes set against each other: each node's figures from its check (and quick bench); the nodes
more than a robust spread below the fleet's median on a figure where higher is better (a bf16 rate, a memory
bandwidth, a PCIe link, a clock, a power limit); what drifted across nodes (driver, CUDA, torch, ECC, power
limit, GPU model); the idle share of the fleet's GPUs at the check and, at the user's price, its cost.

Robust spread: 3 x 1.4826 x the median absolute deviation, never under 5% of the median — identical nodes
do not make a 1% dip an outlier, and one bad node does not drag the median."""

from __future__ import annotations

from collections import Counter
from typing import Any, Optional

from gputriage.model.check import CheckReport
from gputriage.model.fleet import Drift, FleetReport, NodeFigures, NodeResult, Outlier, Waste
from gputriage.model.numbers import median

HIGHER_IS_BETTER = {
    "bf16_tflops": "TFLOP/s",
    "memory_gbs": "GB/s",
    "pcie_gen": "",
    "pcie_width": "lanes",
    "sm_clock_max_mhz": "MHz",
    "power_limit_w": "W",
}
DRIFT_KEYS = ("gpu_name", "driver", "cuda", "torch", "ecc", "power_limit_w")
MAD_SCALE = 1.4826  # the MAD of a normal distribution, as its standard deviation
SPREADS = 3.0
FLOOR = 0.05
SHORT_ID = 8  # hex digits of Ray's node id shown beside a host that several nodes share


def _num(v: Any) -> Optional[float]:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def figures(report: CheckReport, bench: Optional[list[dict[str, Any]]] = None) -> NodeFigures:
    """A node's figures from its check report's facts (the worst GPU where its GPUs differ)."""
    f = report.facts
    n = f.get("gpu.count")
    count: int = n if isinstance(n, int) else 0

    def per_gpu(key: str) -> list[float]:
        return [x for i in range(count) if (x := _num(f.get(f"gpu.{i}.{key}"))) is not None]

    def link(kind: str) -> list[float]:
        out = []
        for i in range(count):
            v = _num(f.get(f"gpu.{i}.pcie.{kind}.loaded"))
            v = v if v is not None else _num(f.get(f"gpu.{i}.pcie.{kind}.current"))
            if v is not None:
                out.append(v)
        return out

    ecc = [f.get(f"gpu.{i}.ecc.enabled") for i in range(count) if isinstance(f.get(f"gpu.{i}.ecc.enabled"), bool)]
    limits, gens, widths = per_gpu("power.limit_enforced_mw"), link("link_gen"), link("link_width")
    clocks, util, sm = per_gpu("clock.sm_max_mhz"), per_gpu("util.gpu_pct"), per_gpu("gpm.sm_active_pct")
    name = f.get("gpu.0.name")
    out = NodeFigures(
        hostname=report.hostname,
        gpus=count,
        gpu_name=name if isinstance(name, str) else None,
        driver=_str(f.get("driver.version")),
        cuda=_str(f.get("driver.cuda_version")),
        torch=_str(f.get("torch.version")),
        ecc=("on" if all(ecc) else "off" if not any(ecc) else "mixed") if ecc else None,
        power_limit_w=min(limits) / 1000 if limits else None,
        pcie_gen=min(gens) if gens else None,
        pcie_width=min(widths) if widths else None,
        sm_clock_max_mhz=min(clocks) if clocks else None,
        util_pct=round(sum(util) / len(util), 1) if util else None,
        sm_active_pct=round(sum(sm) / len(sm), 1) if sm else None,
    )
    for r in bench or []:
        if r.get("name") == "matmul.bf16":
            out.bf16_tflops = _num(r.get("value"))
        elif r.get("name") == "memory.read":
            out.memory_gbs = _num(r.get("value"))
    return out


def _str(v: Any) -> Optional[str]:
    return str(v) if isinstance(v, (str, int, float)) and not isinstance(v, bool) else None


def _host(n: NodeResult) -> str:
    return (n.figures.hostname if n.figures and n.figures.hostname else "") or n.hostname or n.address


def name_nodes(nodes: list[NodeResult]) -> None:
    """Each node's name in the report: its host, and its short node id where another node shares the host
    (two raylets on one machine are two nodes, not one)."""
    hosts = Counter(_host(n) for n in nodes)
    for n in nodes:
        host = _host(n)
        n.name = host if host and hosts[host] == 1 else f"{host} ({n.node_id[:SHORT_ID]})".strip()


def _who(n: NodeResult) -> str:
    return n.name or _host(n) or n.node_id[:SHORT_ID]


def not_visible(n: NodeResult) -> int:
    """The GPUs Ray counts on an answering node that its driver does not list."""
    if not n.ok or n.ray_gpus is None:
        return 0
    return max(0, int(n.ray_gpus) - (n.figures.gpus if n.figures is not None else 0))


def outliers(nodes: list[NodeResult]) -> list[Outlier]:
    ok = [n for n in nodes if n.ok and n.figures is not None]
    out = []
    for key, unit in HIGHER_IS_BETTER.items():
        vals = [(n, v) for n in ok if (v := getattr(n.figures, key)) is not None]
        if len(vals) < 3:  # two nodes cannot say which one is off
            continue
        mid = median(v for _, v in vals)
        mad = median(abs(v - mid) for _, v in vals)
        threshold = mid - max(SPREADS * MAD_SCALE * mad, FLOOR * abs(mid))
        out += [
            Outlier(node=_who(n), figure=key, value=v, fleet_median=mid, threshold=round(threshold, 2), unit=unit)
            for n, v in vals
            if v < threshold
        ]
    return out


def drift(nodes: list[NodeResult]) -> list[Drift]:
    ok = [n for n in nodes if n.ok and n.figures is not None]
    out = []
    for key in DRIFT_KEYS:
        values: dict[str, list[str]] = {}
        for n in ok:
            v = getattr(n.figures, key)
            if v is not None:
                values.setdefault(f"{v:g}" if isinstance(v, float) else str(v), []).append(_who(n))
        if len(values) > 1:
            out.append(Drift(key=key, values=values))
    return out


def waste(nodes: list[NodeResult], price: Optional[float], currency: str = "USD") -> Optional[Waste]:
    """The fleet's GPUs idle at the check: SM activity where every node read it, else GPU-Util (an upper
    bound on useful work). A GPU Ray counts that its driver does not see does no work: it counts, idle."""
    figs = [n.figures for n in nodes if n.ok and n.figures is not None and n.figures.gpus]
    use_sm = bool(figs) and all(f.sm_active_pct is not None for f in figs)
    pairs: list[tuple[int, float]] = [
        (f.gpus, v) for f in figs if (v := f.sm_active_pct if use_sm else f.util_pct) is not None
    ]
    unseen = sum(not_visible(n) for n in nodes)
    pairs += [(unseen, 0.0)] if unseen else []
    gpus = sum(g for g, _ in pairs)
    if not gpus:
        return None
    busy = sum(g * v for g, v in pairs) / gpus
    idle = gpus * (1 - busy / 100)
    w = Waste(
        gpus=gpus,
        busy_pct=round(busy, 1),
        measure="SM activity" if use_sm else "GPU-Util (an upper bound)",
        idle_gpu_equivalents=round(idle, 2),
        not_visible=unseen,
    )
    if price is not None:
        w.price_per_gpu_hour, w.currency = price, currency
        w.idle_cost_per_hour = round(idle * price, 2)
    return w


def findings_by_id(nodes: list[NodeResult]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for n in nodes:
        for f in n.findings:
            who = _who(n)
            if who not in out.setdefault(f.id, []):
                out[f.id].append(who)
    return dict(sorted(out.items(), key=lambda kv: -len(kv[1])))


def judge(report: FleetReport, price: Optional[float], currency: str = "USD") -> None:
    """A fleet report's nodes named and set against each other: outliers, drift, findings by node, idle share."""
    name_nodes(report.nodes)
    for n in report.nodes:
        n.gpus_not_visible = not_visible(n)
    report.nodes.sort(key=lambda n: (n.name, n.node_id))
    report.outliers = outliers(report.nodes)
    report.drift = drift(report.nodes)
    report.findings_by_id = findings_by_id(report.nodes)
    report.waste = waste(report.nodes, price, currency)
