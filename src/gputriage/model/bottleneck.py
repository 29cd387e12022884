"""The verdict vocabulary shared by `run` and `trace` (what each means: diagnosis.bottlenecks)."""

from __future__ import annotations

import enum


class Bottleneck(str, enum.Enum):
    input_starved = "input_starved"
    launch_bound = "launch_bound"
    sync_bound = "sync_bound"
    host_bound = "host_bound"
    h2d_copy_bound = "h2d_copy_bound"
    memory_bound = "memory_bound"
    compute_bound = "compute_bound"
    tensor_cores_idle = "tensor_cores_idle"
    underfilled = "underfilled"
    throttled = "throttled"
    vram_pressure = "vram_pressure"
    contended = "contended"
    comm_bound = "comm_bound"
    idle = "idle"


# the host did not keep the GPU fed
HOST_BOUND = frozenset(
    {Bottleneck.input_starved, Bottleneck.launch_bound, Bottleneck.sync_bound, Bottleneck.host_bound}
)
