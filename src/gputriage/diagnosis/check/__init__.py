"""`check`'s rules, one module each, registered in RULE_MODULES; `default_rules()` lists them, `evaluate`
runs them over a snapshot."""

from __future__ import annotations

import importlib
from typing import Mapping

from gputriage.diagnosis.check.base import Evidence, Rule
from gputriage.model.finding import Finding, triage_order
from gputriage.model.snapshot import Snapshot

RULE_MODULES = (
    "clocks_hw_slowdown",
    "clocks_power_cap",
    "clocks_thermal",
    "compute_mode",
    "container_no_devices",
    "container_shm_small",
    "cpu_cgroup_limit",
    "cpu_iowait",
    "cpu_pressure",
    "cpu_saturated",
    "cpu_single_core",
    "driver_mismatch",
    "driver_missing",
    "ecc_disabled",
    "ecc_uncorrected",
    "env_costly",
    "env_hides_gpus",
    "fallen_off_bus",
    "fs_low_space",
    "fs_slow_reads",
    "fs_slow_type",
    "gpu_idle_held",
    "gpu_lost",
    "kernel_log_unreadable",
    "mem_low_available",
    "mem_pressure",
    "mem_swapping",
    "mig_enabled",
    "net_errors",
    "numa_mismatch",
    "nvrm_errors",
    "pcie_aer",
    "pcie_link_gen",
    "pcie_link_width",
    "pcie_replays",
    "persistence_off",
    "power_limit_lowered",
    "remap_pending",
    "retired_pages",
    "thermal_near_slowdown",
    "thermal_violation",
    "torch_arch_missing",
    "torch_cuda_newer",
    "torch_cuda_unavailable",
    "util_gpu_idle",
    "util_underfilled",
    "vram_foreign_pids",
    "vram_nearly_full",
    "vram_shared",
    "xid_events",
)


def default_rules() -> list[Rule]:
    rules = [importlib.import_module(f"gputriage.diagnosis.check.{name}").RULE for name in RULE_MODULES]
    return sorted(rules, key=lambda r: (r.step, r.id))


def evaluate(
    snapshot: Snapshot, rules: list[Rule] | None = None, settings: Mapping[str, float] | None = None
) -> list[Finding]:
    """Every finding of every rule, in triage order: step, then most severe first. `settings`: the user's, by name
    (`idle_held_min_s`)."""
    ev = Evidence(snapshot, settings)
    findings: list[Finding] = []
    for rule in rules if rules is not None else default_rules():
        findings.extend(rule.evaluate(ev))
    return triage_order(findings)
