"""The workload's own processes on each GPU it used: those that compute there, and those that only hold memory
beside them (`run.job_shares_gpu`, `run.idle_cuda_context`)."""

from __future__ import annotations

from gputriage.model.finding import Threshold
from gputriage.model.run import ProcessSummary

JOB_COMPUTING = Threshold(
    "job_computing_share",
    0.25,
    "share of samples",
    "share of the run in which a process of the job ran kernels (>= 5% of the time, NVML "
    "per-process utilization) for it to count as computing on the GPU",
    "judgement",
)


def job_processes(processes: list[ProcessSummary]) -> dict[int, tuple[list[ProcessSummary], list[ProcessSummary]]]:
    """By GPU, in order: the job's processes that compute there, and those that hold memory and do not (processes
    without a per-process reading left out)."""
    out = {}
    for gpu in sorted({p.gpu for p in processes if p.job}):
        mine = [p for p in processes if p.job and p.gpu == gpu and p.computing_share is not None]
        computing = [p for p in mine if (p.computing_share or 0.0) >= JOB_COMPUTING.value]
        idle = [p for p in mine if (p.computing_share or 0.0) < JOB_COMPUTING.value]
        out[gpu] = (computing, idle)
    return out
