"""Driver loaded, GPUs enumerated: names, UUIDs, bus ids, memory, versions (playbook task 1, 2)."""

from __future__ import annotations

from gputriage.collect.base import Context, fact, nvml_fact
from gputriage.model.fact import Fact
from gputriage.model.reading import Unavailable


def cuda_version_text(value: int) -> str:
    """NVML's 13000 → '13.0'."""
    return f"{value // 1000}.{value % 1000 // 10}"


def collect(ctx: Context) -> list[Fact]:
    failed = ctx.nvml.init()
    if failed is not None:
        ctx.nvml_error = failed
        return [fact("driver.nvml", failed, "nvml:nvmlInit"), fact("gpu.count", failed, "nvml:nvmlInit")]
    facts = [
        fact("driver.nvml", True, "nvml:nvmlInit"),
        nvml_fact(ctx, None, "driver.version", "nvmlSystemGetDriverVersion"),
        nvml_fact(ctx, None, "driver.nvml_version", "nvmlSystemGetNVMLVersion"),
        nvml_fact(ctx, None, "driver.cuda_version", "nvmlSystemGetCudaDriverVersion_v2", transform=cuda_version_text),
    ]
    count = nvml_fact(ctx, None, "gpu.count", "nvmlDeviceGetCount")
    facts.append(count)
    if isinstance(count.value, int):
        ctx.gpus = list(range(count.value))
    for i in ctx.gpus:
        facts += [
            nvml_fact(ctx, i, "name", "nvmlDeviceGetName"),
            nvml_fact(ctx, i, "uuid", "nvmlDeviceGetUUID"),
        ]
        pci = ctx.nvml.call("nvmlDeviceGetPciInfo_v3", i)
        if isinstance(pci, Unavailable):
            facts += [
                fact(f"gpu.{i}.pci.bus_id", pci, "nvml:nvmlDeviceGetPciInfo_v3"),
                fact(f"gpu.{i}.pci.device_id", pci, "nvml:nvmlDeviceGetPciInfo_v3"),
            ]
        else:
            facts += [
                fact(f"gpu.{i}.pci.bus_id", _short_bus_id(pci.get("busId", "")), "nvml:nvmlDeviceGetPciInfo_v3"),
                fact(
                    f"gpu.{i}.pci.device_id",
                    f"0x{int(pci.get('pciDeviceId', 0)) >> 16:04x}",
                    "nvml:nvmlDeviceGetPciInfo_v3",
                ),
            ]
        facts.append(
            nvml_fact(
                ctx,
                i,
                "compute_capability",
                "nvmlDeviceGetCudaComputeCapability",
                transform=lambda cc: f"{cc[0]}.{cc[1]}",
            )
        )
        mem = ctx.nvml.call("nvmlDeviceGetMemoryInfo", i)
        for key in ("total", "used", "free"):
            value = mem if isinstance(mem, Unavailable) else int(mem[key])
            facts.append(fact(f"gpu.{i}.memory.{key}_bytes", value, "nvml:nvmlDeviceGetMemoryInfo"))
    return facts


def _short_bus_id(bus_id: str) -> str:
    """'00000000:18:00.0' → '0000:18:00.0' (the sysfs form)."""
    bus_id = bus_id.lower()
    if len(bus_id.split(":")[0]) == 8:
        bus_id = bus_id[4:]
    return bus_id
