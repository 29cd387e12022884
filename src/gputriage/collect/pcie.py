"""PCIe link generation and width, current vs max (playbook task 3).

Links downshift at idle to save power, so the reading that counts is the one taken while the GPU
works: `collect_loaded` is called during a brief load; without one the facts say so.
"""

from __future__ import annotations

from gputriage.collect.base import Context, fact, nvml_fact
from gputriage.model.fact import Fact
from gputriage.model.reading import Unavailable


def collect(ctx: Context) -> list[Fact]:
    facts: list[Fact] = []
    for i in ctx.gpus:
        facts += [
            nvml_fact(ctx, i, "pcie.link_gen.current", "nvmlDeviceGetCurrPcieLinkGeneration"),
            nvml_fact(ctx, i, "pcie.link_gen.max", "nvmlDeviceGetMaxPcieLinkGeneration"),
            nvml_fact(ctx, i, "pcie.link_gen.gpu_max", "nvmlDeviceGetGpuMaxPcieLinkGeneration"),
            nvml_fact(ctx, i, "pcie.link_width.current", "nvmlDeviceGetCurrPcieLinkWidth"),
            nvml_fact(ctx, i, "pcie.link_width.max", "nvmlDeviceGetMaxPcieLinkWidth"),
            nvml_fact(ctx, i, "pcie.replay_count", "nvmlDeviceGetPcieReplayCounter"),
        ]
    return facts


def collect_loaded(ctx: Context) -> list[Fact]:
    """The link read while a load runs on the GPU."""
    facts: list[Fact] = []
    for i in ctx.gpus:
        facts += [
            nvml_fact(ctx, i, "pcie.link_gen.loaded", "nvmlDeviceGetCurrPcieLinkGeneration"),
            nvml_fact(ctx, i, "pcie.link_width.loaded", "nvmlDeviceGetCurrPcieLinkWidth"),
        ]
    return facts


def not_loaded(ctx: Context, why: Unavailable) -> list[Fact]:
    facts: list[Fact] = []
    for i in ctx.gpus:
        facts += [
            fact(f"gpu.{i}.pcie.link_gen.loaded", why, "gputriage:load"),
            fact(f"gpu.{i}.pcie.link_width.loaded", why, "gputriage:load"),
        ]
    return facts
