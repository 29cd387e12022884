"""More DataLoader workers than the cores the workload may use: where those cores are busy, the workers take turns on
them with each other and with the main process (triage step 4); where they idle, the extra workers cost memory."""

from __future__ import annotations

import math

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RUN, RunEvidence
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording

PER_CORE = Threshold(
    "loader_workers_per_core",
    1.0,
    "workers per core",
    "DataLoader workers per core the workload may use (its affinity, capped by its cgroup's CPU quota) above which "
    "they are too many for the cores",
    "torch's own DataLoader warns above one worker per core of the process's affinity "
    "(torch/utils/data/dataloader.py, check_worker_number_rationality)",
)
CORES_BUSY = Threshold(
    "loader_cores_busy_share",
    0.75,
    "of the usable cores",
    "the workload's CPU (its workers included), as a share of the cores it may use, at which too many workers "
    "crowd the cores rather than idle on them",
    "judgement: a quarter of the cores left idle leaves the main process its turn; the case reported (4 workers on 2 "
    "cores, the workload at 180% of a core) is 0.9",
)


def evaluate(ev: RunEvidence) -> list[Finding]:
    """The run's DataLoader workers outnumber its usable cores: a warning where its CPU fills them, a note where they
    idle."""
    lw = ev.loader
    if lw is None or not lw.cores or lw.workload_cpu_pct is None:
        return []
    busy = lw.workload_cpu_pct / (100.0 * lw.cores)
    if lw.workers <= PER_CORE.value * lw.cores:
        return []
    crowded = busy >= CORES_BUSY.value
    evidence = {
        "workers": lw.workers,
        "cores": lw.cores,
        "workload_cpu_pct": lw.workload_cpu_pct,
        "loader_cpu_pct": lw.cpu_pct,
        "worker_cpu_pct": lw.worker_cpu_pct,
        "cores_busy_share": round(busy, 2),
    }
    suggest = max(1, math.floor(lw.cores) - 1)  # a core left to the main process
    fill = {"workers": lw.workers, "cores": lw.cores, "workload_cpu_pct": lw.workload_cpu_pct, "busy": busy}
    fill |= {"worker_cpu_pct": lw.worker_cpu_pct or 0.0, "suggest": suggest}
    say, severity = ("default", None) if crowded else ("idle", Severity.info)
    return [RULE.finding(evidence, subject="workload", say=say, severity=severity, fill=fill)]


RULE = Rule(
    FindingSpec(
        id="run.loader_workers_oversubscribed",
        step=4,
        severity=Severity.warn,
        commands=RUN,
        needs=("workload", "torch DataLoader"),
        symptom="More DataLoader workers than the cores the workload may use",
        cause="The worker processes take turns on too few cores, with each other and with the main process, which "
        "waits its turn to run each step; more workers than cores add memory (each its own copy of the dataset's "
        "state), not throughput",
        decision="Set the DataLoader's num_workers to the cores less one for the main process, or give the job more "
        "cores (its CPU request or limit, the container's cpuset, `taskset`)",
        condition="DataLoader workers > {loader_workers_per_core:g} per usable core (affinity, cgroup quota); a "
        "warning where the workload's CPU is >= {loader_cores_busy_share:.0%} of those cores, a note below",
        thresholds=(PER_CORE, CORES_BUSY),
        says={
            "default": Wording(
                symptom="{workers:.0f} DataLoader workers share {cores:g} usable core(s): the workload runs at "
                "{workload_cpu_pct:.0f}% of a core ({busy:.0%} of them), each worker at {worker_cpu_pct:.0f}%",
                decision="Set num_workers={suggest:.0f} (the {cores:g} cores less one for the main process), or give "
                "the job more cores (its CPU request or limit, the container's cpuset, `taskset`)",
            ),
            "idle": Wording(
                symptom="{workers:.0f} DataLoader workers share {cores:g} usable core(s); the workload runs at "
                "{workload_cpu_pct:.0f}% of a core ({busy:.0%} of them), each worker at {worker_cpu_pct:.0f}%",
                cause="More worker processes than cores: harmless while they idle (the job waits on something else), "
                "they crowd the cores once they have work; each holds its own memory",
                decision="Set num_workers={suggest:.0f} (the {cores:g} cores less one for the main process) to free "
                "their memory, or give the job more cores if it is to read faster",
            ),
        },
    ),
    evaluate,
)
