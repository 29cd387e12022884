"""Budgets ("enforce budgets"): limits read from a TOML file and checked against a snapshot
(`check`) or a run's windows (`run`, `watch`). Violations are findings (`budget.<key>`).

    [budget]
    vram_headroom_pct = 10       # at least this share of VRAM free
    max_temperature_c = 85
    max_power_pct_of_limit = 98
    min_pcie_width = 16
    min_pcie_gen = 4
    no_swap = true               # no swap in use (check) / no swap-in (run)
    max_throttled_pct = 5        # share of run time with a thermal or hardware slowdown
    min_sm_active_pct = 40       # median SM activity in steady state (run)
    max_iowait_pct = 10
    severity = "warn"            # or "critical": the severity of a violation
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, NamedTuple

from gputriage.diagnosis.run.verdict import steady_bounds
from gputriage.model.files import unreadable
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording
from gputriage.model.numbers import median
from gputriage.model.run import GpuStatic
from gputriage.model.snapshot import Snapshot
from gputriage.model.toml_text import TOMLDecodeError, loads
from gputriage.model.window import Windows

MAX_BUDGET_BYTES = 1 << 20


class Key(NamedTuple):
    kind: type
    step: int
    bounds: str  # what it bounds
    low: float  # the range a value must lie in
    high: float
    commands: tuple[str, ...]


KEYS: dict[str, Key] = {
    "vram_headroom_pct": Key(float, 3, "free VRAM share", 0, 100, ("check", "run", "watch")),
    "max_temperature_c": Key(float, 5, "GPU temperature", 0, 150, ("check", "run", "watch")),
    "max_power_pct_of_limit": Key(
        float, 5, "power draw as a share of the enforced limit", 0, 100, ("check", "run", "watch")
    ),
    "min_pcie_width": Key(int, 5, "PCIe link width", 1, 32, ("check",)),
    "min_pcie_gen": Key(int, 5, "PCIe link generation", 1, 7, ("check",)),
    "no_swap": Key(bool, 4, "swap use", 0, 1, ("check", "run", "watch")),
    "max_throttled_pct": Key(float, 2, "time with thermal/hardware slowdown", 0, 100, ("run", "watch")),
    "min_sm_active_pct": Key(float, 2, "steady-state SM activity", 0, 100, ("run", "watch")),
    "max_iowait_pct": Key(float, 4, "CPU iowait", 0, 100, ("check", "run", "watch")),
}
SPECS = {
    key: FindingSpec(
        id=f"budget.{key}",
        step=k.step,
        severity=Severity.warn,
        commands=k.commands,
        symptom=f"Budget exceeded: {k.bounds}",
        cause=f"{k.bounds} is outside the limit set in the budget file",
        decision="Bring it back within budget, or change the budget deliberately",
        condition=f"the observed {k.bounds} crosses the budget's {key}",
        says={
            "exceeded": Wording(symptom="Budget exceeded: {what}", cause="{bounds} is outside the budget in {source}")
        },
    )
    for key, k in KEYS.items()
}


class BudgetError(Exception):
    """A budget file that cannot be used."""


@dataclass(frozen=True)
class Budget:
    limits: dict[str, Any]
    severity: Severity = Severity.warn
    source: str = ""


def load_budget(path: str | Path) -> Budget:
    path = Path(path)
    try:
        if path.stat().st_size > MAX_BUDGET_BYTES:
            raise BudgetError(f"{path}: larger than {MAX_BUDGET_BYTES >> 10} KiB: not a budget file")
        data = loads(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise BudgetError(unreadable(path, exc)) from None
    except TOMLDecodeError as exc:
        raise BudgetError(f"{path}: not valid TOML: {exc}") from None
    table = data.get("budget", data)
    if not isinstance(table, dict):
        raise BudgetError(f"{path}: [budget] must be a table")
    severity = Severity.warn
    limits: dict[str, Any] = {}
    for key, value in table.items():
        if key == "severity":
            try:
                severity = Severity.parse(str(value))
            except ValueError as exc:
                raise BudgetError(f"{path}: {exc}") from None
            continue
        if key not in KEYS:
            raise BudgetError(f"{path}: unknown budget {key!r} (known: {', '.join(KEYS)})")
        k = KEYS[key]
        if k.kind is bool:
            if not isinstance(value, bool):
                raise BudgetError(f"{path}: {key} must be true or false, not {value!r}")
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise BudgetError(f"{path}: {key} must be a number, not {value!r}")
        elif not math.isfinite(value) or not k.low <= value <= k.high:
            raise BudgetError(f"{path}: {key} = {value!r} is outside {k.low:g}..{k.high:g}")
        limits[key] = value
    if not limits:
        raise BudgetError(f"{path}: no budget in it")
    return Budget(limits, severity, str(path))


def _finding(budget: Budget, key: str, subject: str, observed: Any, text: str) -> Finding:
    return SPECS[key].finding(
        {"budget": key, "limit": budget.limits[key], "observed": observed},
        subject=subject,
        severity=budget.severity,
        say="exceeded",
        fill={"what": text, "bounds": KEYS[key].bounds, "source": budget.source},
    )


def check_snapshot(budget: Budget, snap: Snapshot) -> list[Finding]:
    out: list[Finding] = []
    lim = budget.limits
    count = snap.get("gpu.count")
    for i in range(count if isinstance(count, int) else 0):

        def g(k: str) -> Any:
            return snap.get(f"gpu.{i}.{k}")

        used, total = g("memory.used_bytes"), g("memory.total_bytes")
        if "vram_headroom_pct" in lim and isinstance(used, int) and isinstance(total, int) and total:
            free_pct = round(100.0 * (total - used) / total, 1)
            if free_pct < lim["vram_headroom_pct"]:
                out.append(_finding(budget, "vram_headroom_pct", f"gpu.{i}", free_pct, f"{free_pct}% VRAM free"))
        temp = g("temperature_c")
        if "max_temperature_c" in lim and isinstance(temp, (int, float)) and temp > lim["max_temperature_c"]:
            out.append(_finding(budget, "max_temperature_c", f"gpu.{i}", temp, f"{temp} C"))
        draw, limit = g("power.draw_mw"), g("power.limit_enforced_mw")
        if "max_power_pct_of_limit" in lim and isinstance(draw, int) and isinstance(limit, int) and limit:
            pct = round(100.0 * draw / limit, 1)
            if pct > lim["max_power_pct_of_limit"]:
                out.append(_finding(budget, "max_power_pct_of_limit", f"gpu.{i}", pct, f"{pct}% of the power limit"))
        for key, fact in (("min_pcie_width", "link_width"), ("min_pcie_gen", "link_gen")):
            value = g(f"pcie.{fact}.loaded")
            if not isinstance(value, int):
                value = g(f"pcie.{fact}.current")
            if key in lim and isinstance(value, int) and value < lim[key]:
                out.append(_finding(budget, key, f"gpu.{i}", value, f"PCIe {fact.replace('link_', '')} {value}"))
    swap = snap.get("host.swap.used_bytes")
    if lim.get("no_swap") and isinstance(swap, int) and swap > 0:
        out.append(_finding(budget, "no_swap", "host", swap, f"{swap / 2**20:.0f} MiB of swap in use"))
    iowait = snap.get("host.cpu.iowait_pct")
    if "max_iowait_pct" in lim and isinstance(iowait, (int, float)) and iowait > lim["max_iowait_pct"]:
        out.append(_finding(budget, "max_iowait_pct", "host", iowait, f"iowait {iowait}%"))
    return out


def check_windows(
    budget: Budget, series: Mapping[int, Windows], host: Windows | None, static: dict[int, GpuStatic]
) -> list[Finding]:
    """Budgets over a run: maxima for limits; medians in steady state (between the workload's first
    and last GPU work, as the verdict judges it) for SM activity and iowait."""
    out: list[Finding] = []
    lim = budget.limits
    for i, s in series.items():
        if not len(s):
            continue
        total = static.get(i, GpuStatic()).memory_total_bytes
        used = max((x for x in s.column("used_max_bytes") if x is not None), default=None)
        if "vram_headroom_pct" in lim and total and used is not None:
            free_pct = round(100.0 * (total - used) / total, 1)
            if free_pct < lim["vram_headroom_pct"]:
                out.append(
                    _finding(budget, "vram_headroom_pct", f"gpu.{i}", free_pct, f"{free_pct}% VRAM free at peak")
                )
        temp = max((x for x in s.column("temperature_max_c") if x is not None), default=None)
        if "max_temperature_c" in lim and temp is not None and temp > lim["max_temperature_c"]:
            out.append(_finding(budget, "max_temperature_c", f"gpu.{i}", temp, f"peak {temp:g} C"))
        limit_mw = static.get(i, GpuStatic()).power_limit_mw
        power = max((x for x in s.column("power_max_w") if x is not None), default=None)
        if "max_power_pct_of_limit" in lim and power is not None and limit_mw:
            pct = round(100.0 * power * 1000 / limit_mw, 1)
            if pct > lim["max_power_pct_of_limit"]:
                out.append(_finding(budget, "max_power_pct_of_limit", f"gpu.{i}", pct, f"peak {pct}% of the limit"))
        shares = [(x, n) for x, n in zip(s.column("throttled_share"), s.samples) if x is not None]
        if "max_throttled_pct" in lim and shares:
            pct = round(100.0 * sum(x * n for x, n in shares) / sum(n for _, n in shares), 1)
            if pct > lim["max_throttled_pct"]:
                out.append(_finding(budget, "max_throttled_pct", f"gpu.{i}", pct, f"throttled {pct}% of the time"))
        ws = list(s)
        start, end = steady_bounds(ws)
        steady = ws[(start or 0) : (len(ws) if end is None else end + 1)]
        sm = [w.sm_active_pct for w in steady if w.sm_active_pct is not None]
        if "min_sm_active_pct" in lim and sm:
            med = round(median(sm), 1)
            if med < lim["min_sm_active_pct"]:
                out.append(_finding(budget, "min_sm_active_pct", f"gpu.{i}", med, f"median SM activity {med}%"))
    if host is not None and len(host):
        swap = [x for x in host.column("swap_in_max_pages_per_s") if x is not None]
        if lim.get("no_swap") and swap and max(swap) > 0:
            out.append(_finding(budget, "no_swap", "host", max(swap), "pages swapped in during the run"))
        iow = [x for x in host.column("iowait_pct") if x is not None]
        if "max_iowait_pct" in lim and iow and median(iow) > lim["max_iowait_pct"]:
            out.append(_finding(budget, "max_iowait_pct", "host", round(median(iow), 1), "median iowait"))
    return out
