"""Drift across a fleet: nodes that should be alike read different GPU models, drivers, CUDA versions, torch
builds, ECC modes or power limits."""

from __future__ import annotations

from gputriage.diagnosis.fleet.evidence import FLEET, FleetEvidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording

DRIFT_KEYS = ("gpu_name", "driver", "cuda", "torch", "ecc", "power_limit_w")  # `NodeFigures` fields


def evaluate(ev: FleetEvidence) -> list[Finding]:
    out = []
    for key in DRIFT_KEYS:
        values: dict[str, list[str]] = {}
        for node, v in ev.readings(key):
            values.setdefault(f"{v:g}" if isinstance(v, float) else str(v), []).append(node)
        if len(values) > 1:
            fill = {"spread": spread(values)}
            out.append(RULE.finding({"key": key, "values": values}, subject="fleet", say=key, fill=fill))
    return out


def spread(values: dict[str, list[str]]) -> str:
    """Which nodes read what, the most common value last and only counted (one odd node of a thousand is one
    name, not a thousand)."""
    common, *others = sorted(values, key=lambda v: -len(values[v]))
    named = [f"{v} on {', '.join(values[v])}" for v in others]
    rest = len(values[common])
    return "; ".join([*named, f"{common} on the {'other node' if rest == 1 else f'{rest} others'}"])


_ONE_VERSION = "; one image for every node keeps them so"

RULE = Rule(
    FindingSpec(
        id="fleet.drift",
        step=5,
        severity=Severity.warn,
        commands=FLEET,
        needs=("a Ray cluster",),
        symptom="Nodes of one fleet differ in GPU model, driver, CUDA, torch, ECC or power limit",
        cause="A job spread over nodes that differ runs at the pace of the slowest, and what is fixed or broken in "
        "one version shows on some nodes only",
        decision="Make the nodes alike (one image, one driver, one power policy), or schedule a job's ranks on "
        "nodes that are",
        condition="the answering nodes read more than one value of the GPU model, the driver, its CUDA version, "
        "torch, ECC or the enforced power limit",
        says={
            "gpu_name": Wording(
                symptom="The GPU model differs across nodes: {spread}",
                cause="The nodes hold different GPUs: a job spread over them runs at the slowest one's pace, and "
                "their figures differ by design",
                decision="Schedule a job's ranks on one GPU model (Ray custom resources or node labels), and set "
                "nodes of one model against each other",
            ),
            "driver": Wording(
                symptom="The NVIDIA driver differs across nodes: {spread}",
                cause="Kernels, NCCL and CUDA compatibility differ between driver versions: a fix or a regression "
                "of one shows on some nodes only",
                decision="Install one driver version on every node (the newest your CUDA stack supports)"
                + _ONE_VERSION,
            ),
            "cuda": Wording(
                symptom="The drivers' CUDA version differs across nodes: {spread}",
                cause="The drivers support different CUDA versions: a build made for the newer one fails or falls "
                "back on the others",
                decision="Install one driver version on every node" + _ONE_VERSION,
            ),
            "torch": Wording(
                symptom="torch differs across nodes: {spread}",
                cause="A distributed job's ranks import different torch builds: kernels, NCCL and defaults differ "
                "per node, and so does their speed",
                decision="Install one torch build everywhere (one image, or a Ray runtime_env that pins it)",
            ),
            "ecc": Wording(
                symptom="ECC differs across nodes: {spread}",
                cause="ECC is on for some nodes' GPUs and off for others': memory errors go unseen where it is off, "
                "and the memory available differs",
                decision="Enable ECC on every node (nvidia-smi -e 1, then a reboot), unless it was turned off on "
                "purpose everywhere",
            ),
            "power_limit_w": Wording(
                symptom="The GPUs' enforced power limit (W) differs across nodes: {spread}",
                cause="Under load the GPUs with the lower limit drop their clocks first: the job waits for them",
                decision="Set one limit on every node (nvidia-smi -pl, as root) or find the policy that lowered some",
            ),
        },
    ),
    evaluate,
)
