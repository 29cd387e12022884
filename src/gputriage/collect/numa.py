"""The GPU's NUMA node and CPU affinity vs this process's (playbook task 16)."""

from __future__ import annotations

import os

from gputriage.backends.host import cpu_mask_words, parse_cpu_list
from gputriage.collect.base import Context, fact
from gputriage.model.fact import Fact
from gputriage.model.reading import Unavailable


def collect(ctx: Context, bus_ids: dict[int, str]) -> list[Fact]:
    facts: list[Fact] = []
    nodes = ctx.host.list_dir("/sys/devices/system/node")
    node_ids = [] if isinstance(nodes, Unavailable) else [n for n in nodes if n.startswith("node") and n[4:].isdigit()]
    count = len(node_ids) if node_ids else nodes if isinstance(nodes, Unavailable) else 1
    facts.append(fact("host.numa.node_count", count, "sysfs:/sys/devices/system/node"))
    facts.append(fact("host.process.cpu_affinity", ctx.host.affinity(), "os:sched_getaffinity"))
    ncpu = os.cpu_count() or 64
    words = max(1, (ncpu + 63) // 64)
    for i in ctx.gpus:
        node = ctx.nvml.call("nvmlDeviceGetNumaNodeId", i)
        source = "nvml:nvmlDeviceGetNumaNodeId"
        bus = bus_ids.get(i)
        if isinstance(node, Unavailable) and bus:
            text = ctx.host.read_text(f"/sys/bus/pci/devices/{bus}/numa_node")
            if isinstance(text, str) and text.strip().lstrip("-").isdigit():
                node, source = int(text.strip()), "sysfs:numa_node"
        facts.append(fact(f"gpu.{i}.numa_node", node, source))
        aff = ctx.nvml.call("nvmlDeviceGetCpuAffinity", i, words)
        if isinstance(aff, Unavailable) and bus:
            text = ctx.host.read_text(f"/sys/bus/pci/devices/{bus}/local_cpulist")
            aff = parse_cpu_list(text) if isinstance(text, str) else aff
            facts.append(fact(f"gpu.{i}.cpu_affinity", aff, "sysfs:local_cpulist"))
        else:
            facts.append(
                fact(
                    f"gpu.{i}.cpu_affinity",
                    aff if isinstance(aff, Unavailable) else cpu_mask_words(aff),
                    "nvml:nvmlDeviceGetCpuAffinity",
                )
            )
    return facts
