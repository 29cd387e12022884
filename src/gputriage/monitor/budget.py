"""Budgets ("enforce budgets", the seed's third rule): limits read from a TOML file and checked
against a snapshot (`check`) or a run's samples (`run`, `watch`). Violations are findings.

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

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from gputriage.model.files import unreadable
from gputriage.model.finding import Finding, Severity
from gputriage.model.numbers import median
from gputriage.model.snapshot import Snapshot

KEYS: dict[str, tuple[type, int, str]] = {  # key → (type, triage step, what it bounds)
    "vram_headroom_pct": (float, 3, "free VRAM share"),
    "max_temperature_c": (float, 5, "GPU temperature"),
    "max_power_pct_of_limit": (float, 5, "power draw as a share of the enforced limit"),
    "min_pcie_width": (int, 5, "PCIe link width"),
    "min_pcie_gen": (int, 5, "PCIe link generation"),
    "no_swap": (bool, 4, "swap use"),
    "max_throttled_pct": (float, 2, "time with thermal/hardware slowdown"),
    "min_sm_active_pct": (float, 2, "steady-state SM activity"),
    "max_iowait_pct": (float, 4, "CPU iowait"),
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
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise BudgetError(unreadable(path, exc)) from None
    except tomllib.TOMLDecodeError as exc:
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
        kind = KEYS[key][0]
        if kind is bool and not isinstance(value, bool):
            raise BudgetError(f"{path}: {key} must be true or false, not {value!r}")
        if kind in (int, float) and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise BudgetError(f"{path}: {key} must be a number, not {value!r}")
        limits[key] = value
    if not limits:
        raise BudgetError(f"{path}: no budget in it")
    return Budget(limits, severity, str(path))


def _finding(budget: Budget, key: str, subject: str, observed: Any, text: str) -> Finding:
    limit = budget.limits[key]
    return Finding(id=f"budget.{key}", severity=budget.severity, step=KEYS[key][1],
                   symptom=f"Budget exceeded: {text}", cause=f"{KEYS[key][2]} is outside the budget in {budget.source}",
                   decision="Bring it back within budget, or change the budget deliberately",
                   evidence={"budget": key, "limit": limit, "observed": observed}, subject=subject)


def check_snapshot(budget: Budget, snap: Snapshot) -> list[Finding]:
    out: list[Finding] = []
    lim = budget.limits
    count = snap.get("gpu.count")
    for i in range(count if isinstance(count, int) else 0):
        g = lambda k: snap.get(f"gpu.{i}.{k}")  # noqa: E731
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


def check_samples(budget: Budget, samples: list[dict[str, Any]], gpus: list[int],
                  info: dict[int, dict[str, Any]]) -> list[Finding]:
    """Budgets over a run: maxima for limits, medians in steady state (between the workload's first
    and last GPU work, as the verdict judges it) for SM activity."""
    from gputriage.monitor import classify

    out: list[Finding] = []
    lim = budget.limits
    for i in gpus:
        rows = [g for g in (classify.gpu_row(s, i) for s in samples) if g]
        if not rows:
            continue
        total = info.get(i, {}).get("memory_total_bytes")
        used = max((r.get("used") or 0) for r in rows)
        if "vram_headroom_pct" in lim and total:
            free_pct = round(100.0 * (total - used) / total, 1)
            if free_pct < lim["vram_headroom_pct"]:
                out.append(_finding(budget, "vram_headroom_pct", f"gpu.{i}", free_pct, f"{free_pct}% VRAM free at peak"))
        temps = [r["temp"] for r in rows if "temp" in r]
        if "max_temperature_c" in lim and temps and max(temps) > lim["max_temperature_c"]:
            out.append(_finding(budget, "max_temperature_c", f"gpu.{i}", max(temps), f"peak {max(temps)} C"))
        limit_mw = info.get(i, {}).get("power_limit_mw")
        powers = [r["power"] for r in rows if "power" in r]
        if "max_power_pct_of_limit" in lim and powers and limit_mw:
            pct = round(100.0 * max(powers) / limit_mw, 1)
            if pct > lim["max_power_pct_of_limit"]:
                out.append(_finding(budget, "max_power_pct_of_limit", f"gpu.{i}", pct, f"peak {pct}% of the limit"))
        reasons = [r["reasons"] for r in rows if "reasons" in r]
        if "max_throttled_pct" in lim and reasons:
            pct = round(100.0 * sum(1 for r in reasons if r & classify.THERMAL_OR_HW_BITS) / len(reasons), 1)
            if pct > lim["max_throttled_pct"]:
                out.append(_finding(budget, "max_throttled_pct", f"gpu.{i}", pct, f"throttled {pct}% of the time"))
        end = classify.shutdown_start(samples, i)
        steady_from = samples[0]["t"] + classify.startup_end(samples, i)
        steady_to = samples[-1]["t"] if end is None else samples[0]["t"] + end
        steady = [classify.gpu_row(s, i) for s in samples if steady_from <= s["t"] <= steady_to]
        sm = [g["gpm"][classify.GPM_SM] for g in steady if classify.GPM_SM in g.get("gpm", {})]
        if "min_sm_active_pct" in lim and sm:
            med = round(median(sm), 1)
            if med < lim["min_sm_active_pct"]:
                out.append(_finding(budget, "min_sm_active_pct", f"gpu.{i}", med, f"median SM activity {med}%"))
    hosts = [s.get("host", {}) for s in samples]
    if lim.get("no_swap"):
        swapin = sum(h.get("swapin_s", 0) or 0 for h in hosts)
        if swapin > 0:
            out.append(_finding(budget, "no_swap", "host", swapin, "pages swapped in during the run"))
    iow = [h["iowait"] for h in hosts if "iowait" in h]
    if "max_iowait_pct" in lim and iow and median(iow) > lim["max_iowait_pct"]:
        out.append(_finding(budget, "max_iowait_pct", "host", median(iow), "median iowait"))
    return out
