"""A GPU starved by its DataLoader, whose workers are each busy near a core: the workers are too few for the GPU (or,
where they hold every core, too slow per sample) (triage step 4)."""

from __future__ import annotations

import math
from typing import Any

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RUN, RunEvidence
from gputriage.diagnosis.run.host_side import LOADER_WAITS, stack_shares, waits_on_loader
from gputriage.inworkload.stack_categories import INPUT_WAIT, LOADER_FIELD
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording
from gputriage.model.run import GpuVerdict, LoaderWorkers

WORKER_BUSY = Threshold(
    "loader_worker_busy_pct",
    70.0,
    "% of a core",
    "a DataLoader worker's CPU, on average over the workers, at which each works near a core: the workers make "
    "samples as fast as they can",
    "H200 recordings (tests/fixtures/h200/runs_helpers.json.gz, runs_unseen6_again.json.gz: workers_augment, 4 "
    "workers augmenting images in numpy): the workload's processes without a GPU context ran at 322-339% of a core, "
    "80-85% a worker, while the GPU waited; a worker also waits on its queues and pickles, short of a full core",
)


def evaluate(ev: RunEvidence) -> list[Finding]:
    """Each input_starved GPU of a run whose DataLoader workers each work near a core while its main thread waits on
    them (where its stacks were sampled)."""
    lw = ev.loader
    if lw is None or lw.worker_cpu_pct is None or lw.worker_cpu_pct < WORKER_BUSY.value or not ev.steady:
        return []
    return [_too_few(v, lw) for v in ev.verdicts.values() if v.bottleneck == B.input_starved and _on_loader(v)]


def _on_loader(v: GpuVerdict) -> bool:
    """Its main thread's input waits are on the DataLoader (true where its stacks were not sampled)."""
    shares = stack_shares(v.evidence)
    if shares is None:
        return True
    return waits_on_loader(shares[INPUT_WAIT], v.evidence.get(LOADER_FIELD), v.evidence.get("workload_cpu_pct"), None)


def _too_few(v: GpuVerdict, lw: LoaderWorkers) -> Finding:
    evidence: dict[str, Any] = {
        "workers": lw.workers,
        "worker_cpu_pct": lw.worker_cpu_pct,
        "loader_cpu_pct": lw.cpu_pct,
        "cores": lw.cores,
        "util_pct": v.evidence.get("util_pct"),
    }
    fill: dict[str, Any] = {"gpu": v.gpu, "workers": lw.workers, "worker_cpu_pct": lw.worker_cpu_pct}
    fill["util"] = f" (GPU-Util {v.evidence['util_pct']:.0f}%)" if v.evidence.get("util_pct") is not None else ""
    spare = math.floor(lw.cores) - 1 - lw.workers if lw.cores else None  # a core left to the main process
    say = "default"
    if spare is not None and spare >= 1:
        say, fill["cores"], fill["suggest"] = "spare", lw.cores, lw.workers + min(spare, lw.workers)
    elif spare is not None:
        say, fill["cores"] = "no_spare", lw.cores
    return RULE.finding(evidence, subject=f"gpu.{v.gpu}", say=say, fill=fill)


TOO_FEW = (
    "GPU {gpu} waits for input{util} while its {workers:.0f} DataLoader workers each work {worker_cpu_pct:.0f}% of a "
    "core"
)
RULE = Rule(
    FindingSpec(
        id="run.loader_workers_too_few",
        step=4,
        severity=Severity.warn,
        commands=RUN,
        needs=("gpu", "workload", "torch DataLoader"),
        symptom="The GPU waits for input while each DataLoader worker works near a core",
        cause="The workers make samples as fast as they can and the GPU still waits: there are too few of them for "
        "the GPU, or each sample costs them too much",
        decision="Raise the DataLoader's num_workers while cores are free; else make each sample cheaper (decode and "
        "augment on the GPU, a faster format, smaller samples) or give the job more cores",
        condition="an input_starved GPU, its main thread's input waits >= {loader_wait_share:.0%} on the DataLoader "
        "(where its stacks were sampled), and its workers at >= {loader_worker_busy_pct:g}% of a core each",
        thresholds=(WORKER_BUSY, LOADER_WAITS),
        says={
            "default": Wording(symptom=TOO_FEW),
            "spare": Wording(
                symptom=TOO_FEW + ", with {cores:g} cores usable",
                decision="Raise num_workers to {suggest:.0f} (cores are free: {cores:g} usable, the workers and the "
                "main process hold {workers:.0f} + 1) and run again; more while the GPU still waits and cores stay "
                "free",
            ),
            "no_spare": Wording(
                symptom=TOO_FEW + ", on {cores:g} usable cores",
                cause="The workers make samples as fast as they can on every core the job may use and the GPU still "
                "waits: each sample costs them too much for this GPU",
                decision="Make each sample cheaper (decode and augment on the GPU, a faster format, smaller samples, "
                "work cached across epochs) or give the job more cores (its CPU request or limit, the cpuset)",
            ),
        },
    ),
    evaluate,
)
