"""A node's figures from its check report's facts (and its quick bench): the worst GPU's where its GPUs differ."""

from __future__ import annotations

from typing import Any, Optional

from gputriage.model.check import CheckReport
from gputriage.model.fleet import NodeFigures


def _num(v: Any) -> Optional[float]:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _str(v: Any) -> Optional[str]:
    return str(v) if isinstance(v, (str, int, float)) and not isinstance(v, bool) else None


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
