"""Another process holds memory on this GPU, without which the allocation would have fit."""

from gputriage.diagnosis.memory.evidence import MEMORY, Evidence, oom_evidence, size
from gputriage.diagnosis.memory.thresholds import OTHERS_SHARE
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def _who(ev: Evidence) -> str:
    others = sorted((p for p in ev.state.processes if not p.own), key=lambda p: -(p.used_bytes or 0))
    named = []
    for p in others[:4]:
        who = f"pid {p.pid}" + (f" {p.name}" if p.name else "") + (f" in {p.owner}" if p.owner else "")
        named.append(f"{who} ({size(p.used_bytes)})")
    rest = others[4:]
    return ", ".join(named) + (f" and {len(rest)} more" if rest else "")


def evaluate(ev: Evidence) -> list[Finding]:
    if ev.never_fits() or ev.grew() or not ev.others_in_the_way():
        return []
    fill = {"others": size(ev.others), "who": _who(ev), "requested": size(ev.requested), "where": ev.where()}
    evidence = {
        **oom_evidence(ev),
        "others_mib": round((ev.others or 0) / 2**20, 1),
        "pids": [p.pid for p in ev.state.processes if not p.own],
    }
    return [RULE.finding(evidence, subject=f"gpu.{ev.state.device}", severity=Severity.critical, say="oom", fill=fill)]


RULE = Rule(
    FindingSpec(
        id="memory.other_process",
        step=3,
        severity=Severity.critical,
        commands=MEMORY,
        needs=("allocator snapshot", "NVML per-process memory at the error"),
        symptom="Other processes held GPU memory this job needed",
        cause="Another job, a notebook's kernel, a stale process of an earlier run or an inference server shares the "
        "GPU and holds memory: what was free was not all the GPU has",
        decision="Free the GPU for this job (end the processes named, or move one of the jobs: CUDA_VISIBLE_DEVICES, "
        "the scheduler's GPU allocation); to share it on purpose, bound each job (MIG, "
        "torch.cuda.set_per_process_memory_fraction)",
        condition="at an out-of-memory error, other processes hold >= {others_share_min:.0%} of the GPU's memory "
        "(NVML, read when the error was seen) and the request fits in what was free plus what they held",
        thresholds=(OTHERS_SHARE,),
        says={
            "oom": Wording(
                symptom="Other processes held {others} of the GPU — {who} — when an allocation of {requested} at "
                "{where} failed; without them it would have fit",
            )
        },
    ),
    evaluate,
)
