"""`fleet check --ray ADDRESS`: the check (and `bench --quick`) on every GPU node of a Ray cluster, one task
pinned to each node (`gputriage.fleet`); each node sends back its findings and figures (a few kB), the head
sets them against each other (`diagnosis.fleet.judge`: the fleet's own findings, `fleet.*`). A node that fails or
does not answer within the timeout is reported as such."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any, Callable, Optional

import msgspec

from gputriage.api._common import GputriageError, UsageError, configured_idle_held_min_s, keep_report
from gputriage.api.bench import bench as run_bench
from gputriage.api.check import check, snapshot, snapshot_with
from gputriage.backends.host import Host
from gputriage.diagnosis.fleet.figures import figures
from gputriage.diagnosis.fleet.judge import judge
from gputriage.fleet import FleetError, run_on_nodes
from gputriage.fleet.worker_env import set_by_ray
from gputriage.model.environment import COSTLY_VARS
from gputriage.model.fact import Fact
from gputriage.model.fleet import FleetReport, NodeResult
from gputriage.model.owner import GpuHolder
from gputriage.model.snapshot import Snapshot

REPLAY_ENV = "GPUTRIAGE_FLEET_REPLAY"  # a node that has it reads this recorded snapshot instead of its machine
REPLAY_BENCH_ENV = "GPUTRIAGE_FLEET_REPLAY_BENCH"  # and this recorded `bench --json` instead of benching


def on_node(bench: bool, idle_held_min_s: float | None = None) -> bytes:
    """What runs on each node: its check (and quick bench), reduced to findings and figures. `idle_held_min_s`: the
    head's minimum for an idle holder (None: the node's own config file, else the threshold's)."""
    t0 = time.monotonic()
    try:
        report = check(node_snapshot(), idle_held_min_s=idle_held_min_s)
    except GputriageError as exc:  # the node's own words, not a remote traceback
        return msgspec.json.encode(
            NodeResult(node_id="", ok=False, error=str(exc), seconds=round(time.monotonic() - t0, 2))
        )
    results: Optional[list[dict[str, Any]]] = None
    if bench:
        replay_bench = os.environ.get(REPLAY_BENCH_ENV)
        if replay_bench:
            results = json.loads(Path(replay_bench).read_text())["results"]
        else:
            results = [msgspec.to_builtins(r) for r in run_bench(quick=True, disk=False, store=False).results]
    figs = figures(report, results)
    figs.hostname = figs.hostname or socket.gethostname()
    return msgspec.json.encode(
        NodeResult(
            node_id="",
            figures=figs,
            findings=report.findings,
            processes=holders(report.facts),
            seconds=round(time.monotonic() - t0, 2),
        )
    )


def node_snapshot() -> Snapshot | str:
    """This node's facts (or the recorded snapshot REPLAY_ENV names), with the variables Ray set in this worker
    itself (`env.set_by_engine`): the environment's findings are the job's, not the engine's."""
    replay = os.environ.get(REPLAY_ENV)
    if replay:
        return replay
    snap = snapshot()
    engine, source = set_by_ray(Host(), tuple(COSTLY_VARS))
    return snapshot_with(snap, [Fact("env.set_by_engine", engine, source)]) if source else snap


def holders(facts: dict[str, Any]) -> list[GpuHolder]:
    """The processes on a node's GPUs, as its check listed them."""
    count = facts.get("gpu.count")
    return [
        GpuHolder.from_fact(i, p)
        for i in range(count if isinstance(count, int) else 0)
        for p in facts.get(f"gpu.{i}.processes") or []
        if isinstance(p, dict) and isinstance(p.get("pid"), int)
    ]


def fleet_check(
    address: str,
    *,
    bench: bool = False,
    timeout_s: float = 300.0,
    all_nodes: bool = False,
    price_per_gpu_hour: float | None = None,
    currency: str = "USD",
    store: str | Path | bool | None = None,
    progress: Callable[[int, int, str], None] = lambda _done, _total, _what: None,
    idle_held_min_s: float | None = None,
) -> FleetReport:
    """Check every alive node with GPUs (`all_nodes`: every alive node) of the Ray cluster at `address`.
    `idle_held_min_s`: how long a process must hold GPU memory idle to be named on any node (else this machine's
    config file's `[idle_held] after_minutes`, else each node's own)."""
    if timeout_s <= 0:
        raise UsageError("--timeout must be positive")
    idle_s = configured_idle_held_min_s(idle_held_min_s)
    report = FleetReport(address=address, started_s=time.time(), bench=bench)
    try:
        report.nodes, report.notes = run_on_nodes(
            address, on_node, bench, timeout_s=timeout_s, all_nodes=all_nodes, progress=progress, args=(idle_s,)
        )
    except FleetError as exc:
        raise GputriageError(str(exc)) from None
    judge(report, price_per_gpu_hour, currency)
    report.ended_s = time.time()
    keep_report(report, "fleet", [address], store)
    return report
