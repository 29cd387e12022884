"""Judge `bench`'s measurements: each against its healthy share of the datasheet figure, and the
bench's own conditions (another process on the GPU makes every GPU figure a share)."""

from __future__ import annotations

from typing import Any

from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording
from gputriage.model.probe import ProbeResult
from gputriage.model.specs import pcie_link_gbs

BENCH = ("bench",)
MATMUL_LOW = Threshold(
    "matmul_low_share",
    0.60,
    "of the dense datasheet",
    "GEMM rate under which the GPU underdelivers",
    "measured: large GEMMs reach ~70-80% of the dense datasheet at the power limit (bench on an H200)",
)
MEMORY_LOW = Threshold(
    "memory_low_share",
    0.75,
    "of the datasheet bandwidth",
    "device-memory bandwidth under which something is wrong",
    "measured: copies reach ~90% of HBM bandwidth (bench on an H200: 4,231 of 4,800 GB/s)",
)
PCIE_LOW = Threshold(
    "pcie_low_share",
    0.70,
    "of the raw link rate",
    "pinned copy rate under which the link underdelivers",
    "measured: pinned copies reach 85-88% of the raw link rate (bench on an H200: 54.5 of 63 GB/s)",
)
# healthy share of the datasheet figure: (low, high). The low end decides a finding; the high end (a GPU may beat
# the dense datasheet through boost clocks, copies the HBM figure by a little) only draws the band.
BANDS = {
    "matmul": (MATMUL_LOW.value, 1.25),
    "memory.copy": (MEMORY_LOW.value, 1.05),
    "memory.read": (MEMORY_LOW.value, 1.05),
    "pcie.h2d_pinned": (PCIE_LOW.value, 1.0),
    "pcie.d2h_pinned": (PCIE_LOW.value, 1.0),
    "pcie.h2d_pinned_node": (PCIE_LOW.value, 1.0),
}

MEASURED = "{probe}: {value} {unit}, {pct:.0f}% of the datasheet's {reference}"  # a probe under its band

GPU_SHARED = FindingSpec(
    id="bench.gpu_shared",
    step=3,
    severity=Severity.warn,
    commands=BENCH,
    needs=("gpu",),
    symptom="Other processes used the GPU during the bench",
    cause="The GPU time-slices between processes: every GPU figure here is a share, not this machine's ceiling",
    decision="Bench again on an idle GPU (stop or wait for those processes)",
    condition="a compute process other than the bench's own on the GPU before or after the probes",
    says={"others": Wording(symptom="{count} other {processes} used the GPU during the bench (pid {pids})")},
)
MATMUL_SLOW = FindingSpec(
    id="bench.matmul_slow",
    step=2,
    severity=Severity.warn,
    commands=BENCH,
    needs=("gpu", "torch", "spec"),
    symptom="A GEMM rate is far under the datasheet figure",
    cause="Clocks held down (thermal, power), another process on the GPU, MIG, or a slow library build",
    decision="Run `gputriage check` (clock-event reasons, other processes, MIG, framework build) and bench again",
    condition="best GEMM rate of a dtype < {matmul_low_share:.0%} of its dense datasheet figure",
    thresholds=(MATMUL_LOW,),
    says={
        "measured": Wording(symptom=MEASURED),
        "clocks_held": Wording(
            symptom=MEASURED,
            cause="Clocks were held down during the probe ({reasons})",
            decision="Fix cooling or power delivery before trusting any throughput number",
        ),
        "power_capped": Wording(
            symptom=MEASURED,
            cause="The GPU sat at its power limit: clocks dropped to stay under it",
            decision="Check the enforced power limit (check: power.limit_lowered) and cooling; compare after",
        ),
    },
)
MEMORY_SLOW = FindingSpec(
    id="bench.memory_bandwidth_low",
    step=2,
    severity=Severity.warn,
    commands=BENCH,
    needs=("gpu", "torch", "spec"),
    symptom="Device memory bandwidth is far under its datasheet figure",
    cause="Another process, ECC/row-remap state, or memory clocks held down",
    decision="Check for other processes, ECC/row-remap state and clocks (`gputriage check`)",
    condition="copy or read bandwidth < {memory_low_share:.0%} of the datasheet",
    thresholds=(MEMORY_LOW,),
    says={"measured": Wording(symptom=MEASURED)},
)
PCIE_SLOW = FindingSpec(
    id="bench.pcie_bandwidth_low",
    step=5,
    severity=Severity.warn,
    commands=BENCH,
    needs=("gpu", "torch"),
    symptom="Pinned host↔device copies are far under the link's rate",
    cause="A degraded link (fewer lanes or a lower generation than the card supports), or the pinned buffer sits on "
    "a NUMA node remote from the GPU",
    decision="Pin the process to the GPU's NUMA node (numactl --cpunodebind) and check the link under load",
    condition="pinned copy rate < {pcie_low_share:.0%} of the raw link rate",
    thresholds=(PCIE_LOW,),
    says={
        "measured": Wording(symptom=MEASURED),
        "link_degraded": Wording(
            symptom=MEASURED,
            cause="The link trained below its capability (see pcie.link_width/gen)",
            decision="Reseat the card / check BIOS bifurcation and risers",
        ),
    },
)
SPECS = (GPU_SHARED, MATMUL_SLOW, MEMORY_SLOW, PCIE_SLOW)


def band(probe: str) -> tuple[float, float] | None:
    if probe.startswith("matmul."):
        return BANDS["matmul"]
    if probe.startswith("pcie.h2d_pinned_node"):
        return BANDS["pcie.h2d_pinned_node"]
    return BANDS.get(probe)


def findings(
    results: list[ProbeResult], link_now: tuple[int, int] | None, others: list[dict[str, Any]] | None = None
) -> list[Finding]:
    out = []
    if others:
        pids = sorted({o["pid"] for o in others})
        out.append(
            GPU_SHARED.finding(
                {"other_processes": others},
                subject="gpu.0",
                say="others",
                fill={
                    "count": len(pids),
                    "processes": "process" if len(pids) == 1 else "processes",
                    "pids": ", ".join(map(str, pids)),
                },
            )
        )
    for r in results:
        b = band(r.name)
        pct = r.pct_of_reference
        if b is None or pct is None or pct / 100 >= b[0]:
            continue
        reasons = r.conditions.get("clock_event_reasons", [])
        evidence = {
            "probe": r.name,
            "measured": r.value,
            "unit": r.unit,
            "datasheet": r.reference,
            "pct_of_datasheet": round(pct, 1),
            "healthy_from_pct": round(100 * b[0]),
            **r.conditions,
        }
        fill = {"probe": r.name, "value": r.value, "unit": r.unit, "pct": pct, "reference": r.reference}
        if r.name.startswith("matmul."):
            throttled = [x for x in reasons if x != "sw_power_cap"]
            say = "clocks_held" if throttled else "power_capped" if "sw_power_cap" in reasons else "measured"
            fill["reasons"] = ", ".join(throttled)
            out.append(MATMUL_SLOW.finding(evidence, subject="gpu.0", say=say, fill=fill))
        elif r.name.startswith("memory."):
            out.append(MEMORY_SLOW.finding(evidence, subject="gpu.0", say="measured", fill=fill))
        else:
            degraded = link_now is not None and r.reference and pcie_link_gbs(*link_now) < r.reference
            out.append(
                PCIE_SLOW.finding(evidence, subject="gpu.0", say="link_degraded" if degraded else "measured", fill=fill)
            )
    return out


def compare(results: list[ProbeResult], previous: list[dict[str, Any]] | None) -> dict[str, float]:
    """Change since the last bench on this machine, in percent, per probe."""
    if not previous:
        return {}
    before = {r["name"]: r["value"] for r in previous if isinstance(r.get("value"), (int, float))}
    return {
        r.name: round(100.0 * (r.value - before[r.name]) / before[r.name], 1) for r in results if before.get(r.name)
    }
