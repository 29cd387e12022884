"""A Ray cluster's nodes, each running a task pinned to it (`gputriage fleet`): joining the cluster (after
asking whether Ray answers at the address at all), dispatching, gathering within a timeout."""

from gputriage.fleet.cluster import NodeTask, run_on_nodes
from gputriage.fleet.connect import FleetError, probe

__all__ = ["FleetError", "NodeTask", "probe", "run_on_nodes"]
