"""A process of the job holds GPU memory and never computes, beside one that does (triage step 3)."""

from __future__ import annotations

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RUN, RunEvidence
from gputriage.diagnosis.run.processes import JOB_COMPUTING, job_processes
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording
from gputriage.model.numbers import GIB


def evaluate(ev: RunEvidence) -> list[Finding]:
    """Each GPU on which processes of the command run hold memory and do not compute while another of them does."""
    if not ev.workload:
        return []
    out = []
    for gpu, (computing, idle) in job_processes(ev.processes).items():
        if computing and idle:
            held = sum(p.used_max_bytes or 0 for p in idle)
            out.append(
                RULE.finding(
                    {"pids": [p.pid for p in idle], "used_max_bytes": held},
                    subject=f"gpu.{gpu}",
                    say="several" if len(idle) > 1 else "one",
                    fill={
                        "gpu": gpu,
                        "processes": len(idle),
                        "pids": ", ".join(str(p.pid) for p in idle),
                        "held_gib": held / GIB,
                    },
                )
            )
    return out


RULE = Rule(
    FindingSpec(
        id="run.idle_cuda_context",
        step=3,
        severity=Severity.info,
        commands=RUN,
        needs=("gpu",),
        symptom="A process of this job holds GPU memory but never computes",
        cause="A helper process touched CUDA (a DataLoader worker, a child that imported and initialized "
        "torch.cuda): its context and cached memory sit on the GPU unused",
        decision="Keep CUDA out of helper processes: build tensors on the CPU in workers and move them in the main "
        "process; set CUDA_VISIBLE_DEVICES='' for children that need no GPU",
        condition="a workload process on a GPU whose kernels ran in < {job_computing_share:.0%} of the samples, "
        "while another process of the job computes there",
        thresholds=(JOB_COMPUTING,),
        says={
            "one": Wording(
                symptom="GPU {gpu}: {processes} process of this job (pid {pids}) hold {held_gib:.1f} GiB and never "
                "compute"
            ),
            "several": Wording(
                symptom="GPU {gpu}: {processes} processes of this job (pid {pids}) hold {held_gib:.1f} GiB and never "
                "compute"
            ),
        },
    ),
    evaluate,
)
