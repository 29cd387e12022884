"""Several processes of the job compute on one GPU, each for a share of its time (triage step 3)."""

from __future__ import annotations

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RUN, RunEvidence
from gputriage.diagnosis.run.processes import JOB_COMPUTING, job_processes
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def evaluate(ev: RunEvidence) -> list[Finding]:
    """Each GPU on which more than one process of the command run computes, with each one's share."""
    if not ev.workload:
        return []
    out = []
    for gpu, (computing, _) in job_processes(ev.processes).items():
        if len(computing) > 1:
            shares = ", ".join(f"pid {p.pid} {p.sm_util_mean_pct:.0f}%" for p in computing)
            out.append(
                RULE.finding(
                    {"pids": [p.pid for p in computing], "sm_util_mean_pct": [p.sm_util_mean_pct for p in computing]},
                    subject=f"gpu.{gpu}",
                    say="shared",
                    fill={"gpu": gpu, "processes": len(computing), "shares": shares},
                )
            )
    return out


RULE = Rule(
    FindingSpec(
        id="run.job_shares_gpu",
        step=3,
        severity=Severity.warn,
        commands=RUN,
        needs=("gpu",),
        symptom="Several processes of this job compute on one GPU",
        cause="Processes time-slice the GPU: each gets a share of its time (and holds its own CUDA context, "
        "~0.5 GB), so each runs slower than alone",
        decision="One computing process per GPU: give each process its own GPU (CUDA_VISIBLE_DEVICES per process, "
        "torchrun --nproc_per_node = the GPU count), or do the work in one process (threads, CUDA streams); "
        "where sharing is wanted, MPS runs the processes' kernels side by side",
        condition="two or more of the workload's processes each run kernels in >= {job_computing_share:.0%} of the "
        "samples on the same GPU",
        thresholds=(JOB_COMPUTING,),
        says={
            "shared": Wording(
                symptom="GPU {gpu}: {processes} processes of this job compute on it, each for a share of its time "
                "(kernels running: {shares})"
            )
        },
    ),
    evaluate,
)
