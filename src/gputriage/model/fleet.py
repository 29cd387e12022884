"""`fleet check`: the check (and a quick bench) on every GPU node of a cluster — each node's findings and
figures; the fleet's own findings (`fleet.*`: the nodes whose figures fall below the fleet's, what drifted across
nodes, the nodes that failed, the GPUs Ray counts that a driver does not see) and their tables; what the idle share
costs."""

from __future__ import annotations

from typing import Optional

import msgspec

from gputriage.model.finding import Finding
from gputriage.model.owner import GpuHolder

FLEET_SCHEMA = "gputriage.fleet"
FLEET_VERSION = 1
SHORT_ID = 8  # hex digits of Ray's node id shown beside a host that several nodes share


class NodeFigures(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What a node's check (and bench) read: the worst GPU's where the GPUs differ."""

    hostname: str = ""
    gpus: int = 0
    gpu_name: Optional[str] = None
    driver: Optional[str] = None
    cuda: Optional[str] = None
    torch: Optional[str] = None
    ecc: Optional[str] = None  # "on", "off", "mixed"
    power_limit_w: Optional[float] = None  # the lowest enforced limit of its GPUs
    pcie_gen: Optional[float] = None  # the lowest link generation (under load where read so)
    pcie_width: Optional[float] = None
    sm_clock_max_mhz: Optional[float] = None
    util_pct: Optional[float] = None  # mean over its GPUs, at the check
    sm_active_pct: Optional[float] = None
    bf16_tflops: Optional[float] = None  # bench --quick: matmul.bf16 on GPU 0
    memory_gbs: Optional[float] = None  # bench --quick: memory.read


class NodeResult(msgspec.Struct, kw_only=True):
    node_id: str  # Ray's: what tells two nodes on one host apart
    address: str = ""
    hostname: str = ""  # as Ray names the node's host
    name: str = ""  # as the report names it: the host, with a short node id where nodes share a host
    ray_gpus: Optional[float] = None  # the GPUs Ray counts on the node (its GPU resource)
    gpus_not_visible: int = 0  # of those, how many the node's driver does not see (NVML lists fewer)
    ok: bool = True
    error: Optional[str] = None  # "timeout after 300 s", or what the node's task raised
    seconds: Optional[float] = None
    figures: Optional[NodeFigures] = None
    findings: list[Finding] = []
    processes: list[GpuHolder] = []  # who holds each of its GPUs, as its check listed them

    @property
    def short_id(self) -> str:
        """The first hex digits of Ray's node id: enough to tell apart nodes that share a host."""
        return self.node_id[:SHORT_ID]


class Outlier(msgspec.Struct, kw_only=True):
    node: str  # hostname (or node id)
    figure: str
    value: float
    fleet_median: float
    threshold: float  # below this a node is called out
    unit: str = ""


class Drift(msgspec.Struct, kw_only=True):
    key: str
    values: dict[str, list[str]]  # value -> nodes


class Waste(msgspec.Struct, kw_only=True, omit_defaults=True):
    gpus: int
    busy_pct: float  # mean over the fleet's GPUs at the check (SM activity where read, else GPU-Util)
    measure: str
    idle_gpu_equivalents: float
    not_visible: int = 0  # GPUs Ray counts that their driver does not see: in `gpus`, counted idle
    price_per_gpu_hour: Optional[float] = None
    idle_cost_per_hour: Optional[float] = None
    currency: Optional[str] = None
    note: str = "a reading at the moment of the check, not an average over time"


class FleetReport(msgspec.Struct, kw_only=True):
    schema: str = FLEET_SCHEMA
    version: int = FLEET_VERSION
    id: Optional[int] = None
    address: str = ""
    started_s: Optional[float] = None
    ended_s: Optional[float] = None
    bench: bool = False
    nodes: list[NodeResult] = []
    outliers: list[Outlier] = []
    drift: list[Drift] = []
    findings: list[Finding] = []  # the fleet's own (`fleet.*`): its nodes set against each other
    findings_by_id: dict[str, list[str]] = {}  # a node's finding id -> the nodes that reported it
    waste: Optional[Waste] = None
    notes: list[str] = []
