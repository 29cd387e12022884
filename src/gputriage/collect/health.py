"""ECC, row remapping, retired pages; persistence, MIG and compute modes (task 12 and the checklist)."""

from __future__ import annotations

from gputriage.collect.base import Context, fact, nvml_fact
from gputriage.model.fact import Fact
from gputriage.model.reading import Unavailable

NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0
NVML_AGGREGATE_ECC = 1
NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT = 1
COMPUTE_MODES = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}


def collect(ctx: Context) -> list[Fact]:
    facts: list[Fact] = []
    for i in ctx.gpus:
        ecc = ctx.nvml.call("nvmlDeviceGetEccMode", i)
        facts.append(
            fact(
                f"gpu.{i}.ecc.enabled",
                ecc if isinstance(ecc, Unavailable) else bool(ecc[0]),
                "nvml:nvmlDeviceGetEccMode",
            )
        )
        facts += [
            nvml_fact(
                ctx,
                i,
                "ecc.volatile_uncorrected",
                "nvmlDeviceGetTotalEccErrors",
                NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                NVML_VOLATILE_ECC,
            ),
            nvml_fact(
                ctx,
                i,
                "ecc.aggregate_uncorrected",
                "nvmlDeviceGetTotalEccErrors",
                NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                NVML_AGGREGATE_ECC,
            ),
        ]
        rows = ctx.nvml.call("nvmlDeviceGetRemappedRows", i)
        for k, name in ((2, "remap.pending"), (3, "remap.failed")):
            facts.append(
                fact(
                    f"gpu.{i}.{name}",
                    rows if isinstance(rows, Unavailable) else bool(rows[k]),
                    "nvml:nvmlDeviceGetRemappedRows",
                )
            )
        facts.append(
            fact(
                f"gpu.{i}.remap.uncorrectable_rows",
                rows if isinstance(rows, Unavailable) else int(rows[1]),
                "nvml:nvmlDeviceGetRemappedRows",
            )
        )
        facts.append(
            nvml_fact(ctx, i, "retired_pages.pending", "nvmlDeviceGetRetiredPagesPendingStatus", transform=bool)
        )
        facts.append(nvml_fact(ctx, i, "persistence_mode", "nvmlDeviceGetPersistenceMode", transform=bool))
        mig = ctx.nvml.call("nvmlDeviceGetMigMode", i)
        facts.append(
            fact(
                f"gpu.{i}.mig.enabled",
                mig if isinstance(mig, Unavailable) else bool(mig[0]),
                "nvml:nvmlDeviceGetMigMode",
            )
        )
        facts.append(
            nvml_fact(
                ctx,
                i,
                "compute_mode",
                "nvmlDeviceGetComputeMode",
                transform=lambda m: COMPUTE_MODES.get(int(m), str(m)),
            )
        )
    return facts
