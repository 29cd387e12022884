"""`check` and `snapshot`: the playbook on this machine or a recorded one; the catalog."""

from __future__ import annotations

from pathlib import Path

from gputriage.api._common import GputriageError, configured_idle_held_min_s, configured_price, open_budget
from gputriage.backends.host import Host
from gputriage.backends.nvml import PynvmlBackend
from gputriage.collect import DEFAULT_LOAD_MS, collect_snapshot
from gputriage.diagnosis.budget import check_snapshot
from gputriage.diagnosis.catalog import for_command
from gputriage.diagnosis.check import evaluate
from gputriage.diagnosis.check.rules.gpu_idle_held import ID as IDLE_HELD
from gputriage.diagnosis.idle_held import priced
from gputriage.diagnosis.verify import Context, with_verify
from gputriage.model.catalog import Catalog
from gputriage.model.check import CheckReport, check_report
from gputriage.model.finding import triage_order
from gputriage.model.snapshot import Snapshot, SnapshotError
from gputriage.probes.disk import check_facts


def snapshot(
    *, window_s: float = 0.5, load: bool = True, framework: bool = True, refresh: bool = False, full: bool = False
) -> Snapshot:
    """Every fact `check` reads on this machine (no GPU, driver or torch needed)."""
    nvml, host = PynvmlBackend(), Host()
    try:
        snap = collect_snapshot(
            nvml,
            host,
            window_s=window_s,
            load_ms=DEFAULT_LOAD_MS if load else 0.0,
            use_framework=framework,
            use_cache=not refresh,
        )
    finally:
        nvml.shutdown()
    if full:
        snap = snapshot_with(snap, check_facts(host.cwd))
    return snap


def snapshot_with(snap: Snapshot, facts: list) -> Snapshot:
    return Snapshot(
        facts=snap.facts + tuple(facts),
        taken_at=snap.taken_at,
        hostname=snap.hostname,
        tool_version=snap.tool_version,
        raw=snap.raw,
    )


def check(
    source: Snapshot | str | Path | None = None,
    *,
    budget: str | Path | None = None,
    price_per_gpu_hour: float | None = None,
    currency: str | None = None,
    idle_held_min_s: float | None = None,
    **snapshot_options: object,
) -> CheckReport:
    """The playbook's findings on this machine, or on a recorded snapshot (a Snapshot or its file). With a price
    per GPU-hour (else the config file's `[cost]`), the GPU-hours a finding counts are also said in money.
    `idle_held_min_s`: how long a process must have held GPU memory idle to be named (else the config file's
    `[idle_held] after_minutes`, else 10 min)."""
    limits = open_budget(budget)
    idle_s = configured_idle_held_min_s(idle_held_min_s)
    if isinstance(source, (str, Path)):
        try:
            source = Snapshot.load(source)
        except SnapshotError as exc:
            raise GputriageError(str(exc)) from None
    snap = source if source is not None else snapshot(**snapshot_options)  # type: ignore[arg-type]
    findings = evaluate(snap, settings={"idle_held_min_s": idle_s} if idle_s is not None else None)
    if limits is not None:
        findings = triage_order(findings + check_snapshot(limits, snap))
    price, unit = (price_per_gpu_hour, currency) if price_per_gpu_hour is not None else configured_price()
    findings = priced(findings, (IDLE_HELD,), price, currency or unit or "USD")
    return check_report(snap, with_verify(findings, Context("check")))


def catalog(command: str | None = None) -> Catalog:
    """Every finding id a command (or any command) can report, with what it means and what to do."""
    return Catalog(rules=for_command(command))
