"""Ray orchestration: join the cluster, pin one task to each alive node (those Ray counts GPUs on, or all),
gather what each sends back within a timeout. A node whose task fails or stays silent is reported as such,
in the task's own words; every node is keyed by Ray's node id (two nodes may share a host)."""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

import msgspec

from gputriage.fleet.connect import CONNECT_TIMEOUT_S, FleetError, probe
from gputriage.model.fleet import NodeResult

# what runs on each node: given whether to bench, the encoded NodeResult of its check
NodeTask = Callable[..., bytes]  # (bench, *args) -> a NodeResult's JSON
Progress = Callable[[int, int, str], None]


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise FleetError("`gputriage fleet` needs Ray: pip install 'gputriage[fleet]'") from None
    return ray


def join(address: str, connect_timeout_s: float = CONNECT_TIMEOUT_S) -> Any:
    """The `ray` module, joined to the cluster at `address` (quiet: no Ray log line reaches the terminal)."""
    probe(address, connect_timeout_s)  # before Ray's import (seconds): an address that is not Ray's is said at once
    ray = _ray()
    try:
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise FleetError(f"cannot join the Ray cluster at {address}: {exc}") from None
    return ray


def _answer(ray: Any, ref: Any) -> NodeResult:
    try:
        return msgspec.json.decode(ray.get(ref), type=NodeResult)
    except Exception as exc:  # the task's own error, whatever it was: the node is reported failed
        cause = getattr(exc, "cause", None) or exc  # a RayTaskError wraps what the task raised
        words = str(cause).strip().splitlines()
        return NodeResult(node_id="", ok=False, error=f"{type(cause).__name__}: {words[-1] if words else ''}")


def _from_ray(r: NodeResult, node: dict[str, Any]) -> NodeResult:
    """What Ray knows of the node, beside what its task said."""
    r.node_id, r.address = node["NodeID"], node.get("NodeManagerAddress", "")
    r.hostname = node.get("NodeManagerHostname", "") or r.hostname
    gpus = node.get("Resources", {}).get("GPU")
    r.ray_gpus = float(gpus) if isinstance(gpus, (int, float)) else None
    return r


def run_on_nodes(
    address: str,
    task: NodeTask,
    bench: bool,
    *,
    timeout_s: float,
    all_nodes: bool = False,
    progress: Progress = lambda _done, _total, _what: None,
    args: tuple[Any, ...] = (),
) -> tuple[list[NodeResult], list[str]]:
    """Each chosen node's answer (by node id), and notes on the cluster; `task(bench, *args)` runs on each."""
    ray = join(address)
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    notes: list[str] = []
    try:
        nodes = [n for n in ray.nodes() if n.get("Alive") and (all_nodes or n.get("Resources", {}).get("GPU", 0) > 0)]
        if not nodes:
            notes.append("no alive node with GPUs in the cluster (--all-nodes checks the others)")
        remote = ray.remote(num_cpus=0, max_retries=0)(task)
        refs = {
            remote.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(
                bench, *args
            ): n
            for n in nodes
        }
        results: dict[str, NodeResult] = {}
        deadline = time.monotonic() + timeout_s
        pending = list(refs)
        progress(0, len(nodes), "checking")
        while pending and time.monotonic() < deadline:
            done, pending = ray.wait(pending, num_returns=1, timeout=max(0.1, deadline - time.monotonic()))
            for ref in done:
                r = _from_ray(_answer(ray, ref), refs[ref])
                results[r.node_id] = r
                progress(len(results), len(nodes), r.figures.hostname if r.figures else r.hostname or r.address)
        for ref in pending:
            ray.cancel(ref, force=True)
            r = _from_ray(NodeResult(node_id="", ok=False, error=f"no answer within {timeout_s:g} s"), refs[ref])
            results[r.node_id] = r
    finally:
        ray.shutdown()
    return list(results.values()), notes
