"""What a fleet judgement reads, built once: every node as the report names it (what its check and quick bench
read, or why it did not answer, and the GPUs Ray counts on it), and the cluster it was asked of."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, Union

from gputriage.diagnosis.fleet.nodes import who
from gputriage.model.fleet import NodeResult

FLEET = ("fleet",)  # the command a `fleet.*` finding comes from

Figure = Union[float, str]


@dataclass(frozen=True)
class FleetEvidence:
    """The fleet's nodes, named, in the report's order; each rule sets them against each other."""

    nodes: tuple[NodeResult, ...]
    address: str = ""
    bench: bool = False  # each node ran `bench --quick` too (its bf16 rate and memory bandwidth)

    @classmethod
    def of(cls, nodes: Sequence[NodeResult], address: str = "", bench: bool = False) -> FleetEvidence:
        return cls(tuple(nodes), address, bench)

    @property
    def answered(self) -> tuple[NodeResult, ...]:
        """The nodes whose check answered, with their figures."""
        return tuple(n for n in self.nodes if n.ok and n.figures is not None)

    def readings(self, figure: str) -> list[tuple[str, Figure]]:
        """(node, value) of one figure (a `NodeFigures` field) on every answering node that read it."""
        out = []
        for n in self.answered:
            value = getattr(n.figures, figure)
            if value is not None:
                out.append((who(n), value))
        return out

    def numbers(self, figure: str) -> list[tuple[str, float]]:
        """Like `readings`, for a figure that is a number."""
        return [(node, float(v)) for node, v in self.readings(figure) if isinstance(v, (int, float))]
