"""A fleet's nodes as the report names them, and the GPUs Ray counts on a node that its driver does not see."""

from __future__ import annotations

from collections import Counter

from gputriage.model.fleet import NodeResult


def _host(n: NodeResult) -> str:
    return (n.figures.hostname if n.figures and n.figures.hostname else "") or n.hostname or n.address


def name_nodes(nodes: list[NodeResult]) -> None:
    """Each node's name in the report: its host, and its short node id where another node shares the host
    (two raylets on one machine are two nodes, not one)."""
    hosts = Counter(_host(n) for n in nodes)
    for n in nodes:
        host = _host(n)
        n.name = host if host and hosts[host] == 1 else f"{host} ({n.short_id})".strip()


def who(n: NodeResult) -> str:
    """The node as findings and tables name it."""
    return n.name or _host(n) or n.short_id


def not_visible(n: NodeResult) -> int:
    """The GPUs Ray counts on an answering node that its driver does not list."""
    if not n.ok or n.ray_gpus is None:
        return 0
    return max(0, int(n.ray_gpus) - (n.figures.gpus if n.figures is not None else 0))
