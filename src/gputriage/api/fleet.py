"""`fleet check --ray ADDRESS`: the check (and `bench --quick`) on every GPU node of a Ray cluster, one task
pinned to each node; each node sends back its findings and figures (a few kB), the head sets them against
each other. A node that fails or does not answer within the timeout is reported as such."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable, Optional

from gputriage.api._common import GputriageError, UsageError, keep_report
from gputriage.model.fleet import FleetReport, NodeResult

REPLAY_ENV = "GPUTRIAGE_FLEET_REPLAY"  # a node that has it reads this recorded snapshot instead of its machine
REPLAY_BENCH_ENV = "GPUTRIAGE_FLEET_REPLAY_BENCH"  # and this recorded `bench --json` instead of benching


def on_node(bench: bool) -> bytes:
    """What runs on each node: its check (and quick bench), reduced to findings and figures."""
    import json
    import socket

    import msgspec

    from gputriage.api.check import check, snapshot
    from gputriage.diagnosis.fleet.compare import figures

    t0 = time.monotonic()
    replay = os.environ.get(REPLAY_ENV)
    try:
        report = check(replay) if replay else check(snapshot())
    except GputriageError as exc:  # the node's own words, not a remote traceback
        return msgspec.json.encode(NodeResult(node_id="", ok=False, error=str(exc),
                                              seconds=round(time.monotonic() - t0, 2)))
    results: Optional[list[dict[str, Any]]] = None
    if bench:
        replay_bench = os.environ.get(REPLAY_BENCH_ENV)
        if replay_bench:
            results = json.loads(Path(replay_bench).read_text())["results"]
        else:
            from gputriage.api.bench import bench as run_bench

            results = [msgspec.to_builtins(r) for r in run_bench(quick=True, disk=False, store=False).results]
    figs = figures(report, results)
    figs.hostname = figs.hostname or socket.gethostname()
    return msgspec.json.encode(NodeResult(node_id="", figures=figs, findings=report.findings,
                                          seconds=round(time.monotonic() - t0, 2)))


def fleet_check(address: str, *, bench: bool = False, timeout_s: float = 300.0, all_nodes: bool = False,
                price_per_gpu_hour: float | None = None, currency: str = "USD",
                store: str | Path | bool | None = None,
                progress: Callable[[int, int, str], None] = lambda _done, _total, _what: None) -> FleetReport:
    """Check every alive node with GPUs (`all_nodes`: every alive node) of the Ray cluster at `address`."""
    try:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    except ImportError:
        raise GputriageError("`gputriage fleet` needs Ray: pip install 'gputriage[fleet]'") from None
    import msgspec

    from gputriage.diagnosis.fleet import compare as judge

    if timeout_s <= 0:
        raise UsageError("--timeout must be positive")
    _reachable(address)
    try:
        import logging

        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise GputriageError(f"cannot join the Ray cluster at {address}: {exc}") from None
    report = FleetReport(address=address, started_s=time.time(), bench=bench)
    try:
        nodes = [n for n in ray.nodes() if n.get("Alive") and (all_nodes or n.get("Resources", {}).get("GPU", 0) > 0)]
        if not nodes:
            report.notes.append("no alive node with GPUs in the cluster (--all-nodes checks the others)")
        task = ray.remote(num_cpus=0, max_retries=0)(on_node)
        refs = {task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(bench):
                n for n in nodes}
        results: dict[str, NodeResult] = {}
        deadline = time.monotonic() + timeout_s
        pending = list(refs)
        progress(0, len(nodes), "checking")
        while pending and time.monotonic() < deadline:
            done, pending = ray.wait(pending, num_returns=1, timeout=max(0.1, deadline - time.monotonic()))
            for ref in done:
                n = refs[ref]
                try:
                    r = msgspec.json.decode(ray.get(ref), type=NodeResult)
                except Exception as exc:  # the task's own error, whatever it was: the node is reported failed
                    cause = getattr(exc, "cause", None) or exc  # a RayTaskError wraps what the task raised
                    words = str(cause).strip().splitlines()
                    r = NodeResult(node_id="", ok=False, error=f"{type(cause).__name__}: {words[-1] if words else ''}")
                r.node_id, r.address = n["NodeID"], n.get("NodeManagerAddress", "")
                results[n["NodeID"]] = r
                progress(len(results), len(nodes), r.figures.hostname if r.figures else r.address)
        for ref in pending:
            n = refs[ref]
            ray.cancel(ref, force=True)
            results[n["NodeID"]] = NodeResult(node_id=n["NodeID"], address=n.get("NodeManagerAddress", ""), ok=False,
                                              error=f"no answer within {timeout_s:g} s")
    finally:
        ray.shutdown()
    report.nodes = sorted(results.values(), key=lambda r: (r.figures.hostname if r.figures else "", r.node_id))
    report.outliers = judge.outliers(report.nodes)
    report.drift = judge.drift(report.nodes)
    report.findings_by_id = judge.findings_by_id(report.nodes)
    report.waste = judge.waste(report.nodes, price_per_gpu_hour, currency)
    report.ended_s = time.time()
    keep_report(report, "fleet", [address], store)
    return report


def _reachable(address: str, timeout_s: float = 5.0) -> None:
    """A host:port that does not answer is said at once (Ray itself retries for minutes)."""
    import socket

    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        return  # "auto", a ray:// URL: Ray resolves it
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise GputriageError(f"cannot join the Ray cluster at {address}: {exc.strerror or exc}") from None
